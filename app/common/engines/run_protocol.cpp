#include "engines/run_protocol.hpp"

namespace metaroce::engines {

ctrl_msg start_msg(test_kind t, const engine_setup& s, uint64_t echo_va, uint32_t rkey)
{
    ctrl_msg m = make_ctrl(ctrl_type::start);
    m.test = uint8_t(t);
    m.size = wire::be64_t::from_host(s.size);
    m.iters = wire::be64_t::from_host(s.iters);
    m.slots = wire::be32_t::from_host(s.slots);
    m.va = wire::be64_t::from_host(echo_va);
    m.rkey = wire::be32_t::from_host(rkey);
    return m;
}

ctrl_msg done_msg(const engine& active)
{
    ctrl_msg m = make_ctrl(ctrl_type::done);
    m.iters = wire::be64_t::from_host(active.result().iterations);
    m.len = wire::be64_t::from_host(active.busiest());
    return m;
}

void apply_more(engine& active, const ctrl_msg& more)
{
    active.extend(more.qps.host(), more.iters.host());
}

std::optional<test_kind> test_of(const ctrl_msg& start)
{
    if (start.test > uint8_t(test_kind::send_lat)) {
        return std::nullopt;
    }
    return test_kind(start.test);
}

engine_setup passive_setup(const ctrl_msg& start, engine_setup base)
{
    base.size = start.size.host();
    base.iters = start.iters.host();
    base.slots = start.slots.host();
    base.remote_va = start.va.host();
    base.rkey = start.rkey.host();
    return base;
}

std::vector<ctrl_msg> answer_done(engine& passive, const ctrl_msg& done, bool check)
{
    passive.stop();
    std::vector<ctrl_msg> out;
    const auto unused = passive.unused_receives();
    for (size_t ci = 0; ci < unused.size(); ++ci) {
        if (unused[ci] != 0) {
            ctrl_msg m = make_ctrl(ctrl_type::more);
            m.qps = wire::be16_t::from_host(uint16_t(ci));
            m.iters = wire::be64_t::from_host(unused[ci]);
            out.push_back(m);
        }
    }
    if (!out.empty()) {
        return out;
    }
    ctrl_msg v = make_ctrl(ctrl_type::verdict);
    verdict_state state = verdict_state::not_checked;
    uint64_t bad = 0;
    if (check) {
        passive.verify(done.len.host());
        const engine_result& r = passive.result();
        bad = r.bad_bytes + r.bad_lengths;
        state = bad != 0 ? verdict_state::mismatch
                : r.checked ? verdict_state::ok
                            : verdict_state::not_checked;
    }
    v.slots = wire::be32_t::from_host(uint32_t(state));
    v.a = wire::be64_t::from_host(bad);
    out.push_back(v);
    return out;
}

verdict_info read_verdict(const ctrl_msg& v)
{
    return verdict_info{v.a.host(), verdict_state(v.slots.host())};
}

} // namespace metaroce::engines
