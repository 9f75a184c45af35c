#include "suite.hpp"

namespace metaroce::conformance {

std::vector<test_case>& registry()
{
    static std::vector<test_case> all;
    return all;
}

region ctx::mr(uint64_t len, uint32_t access)
{
    const auto r = t.reg_mr(len, access);
    if (!r) {
        fail("the IUT could not register a " + std::to_string(len) + "-byte region");
    }
    return *r;
}

std::vector<uint8_t> ctx::mem(const region& r, uint64_t off, uint64_t len)
{
    auto v = t.read_mem(r, off, len);
    if (v.size() != len) {
        fail("reading the IUT's memory failed");
    }
    return v;
}

void ctx::fill(const region& r, uint64_t off, const std::vector<uint8_t>& bytes)
{
    if (!t.write_mem(r, off, bytes)) {
        fail("writing the IUT's memory failed");
    }
}

void ctx::post_recv(const tconn& c, uint16_t stream, const region& r, uint64_t off, uint32_t len,
                    uint64_t wr_id)
{
    const post_result pr = t.post_recv(c.iut_id, stream, r, off, len, wr_id);
    if (pr != post_result::ok) {
        fail("posting a receive on the IUT failed: " + std::string(to_string(pr)));
    }
}

void ctx::post_send(const tconn& c, const send_req& s)
{
    const post_result pr = t.post_send(c.iut_id, s);
    if (pr != post_result::ok) {
        fail("posting a send on the IUT failed: " + std::string(to_string(pr)));
    }
}

void ctx::poll()
{
    for (const completion& c : t.poll_cq()) {
        cq.push_back(c);
    }
}

const completion* ctx::find_wc(uint64_t wr_id) const
{
    for (const completion& c : cq) {
        if (c.wr_id == wr_id) {
            return &c;
        }
    }
    return nullptr;
}

bool ctx::completed(uint64_t wr_id)
{
    poll();
    return find_wc(wr_id) != nullptr;
}

completion ctx::wait_wc(uint64_t wr_id, uint64_t timeout_ns)
{
    const uint64_t deadline = t.now_ns() + timeout_ns;
    const uint64_t step = exact() ? 2'000 : 10'000'000;
    for (;;) {
        poll();
        if (const completion* c = find_wc(wr_id)) {
            return *c;
        }
        if (t.now_ns() >= deadline) {
            fail("no completion for wr_id " + std::to_string(wr_id) + " within " +
                 std::to_string(timeout_ns / 1000) + " us");
        }
        p.idle(std::min(step, deadline - t.now_ns()));
    }
}

bool ctx::wait_state(conn_id c, const std::function<bool(std::optional<conn_state>)>& pred,
                     uint64_t timeout_ns)
{
    const uint64_t deadline = t.now_ns() + timeout_ns;
    const uint64_t step = exact() ? 2'000 : 10'000'000;
    for (;;) {
        if (pred(t.state(c))) {
            return true;
        }
        if (t.now_ns() >= deadline) {
            return false;
        }
        p.idle(std::min(step, deadline - t.now_ns()));
    }
}

void ctx::check_counted(const counter_mark& m, uint64_t at_least)
{
    const auto now = t.counter(m.name);
    if (!m.before || !now) {
        return;
    }
    check(*now - *m.before >= at_least,
          "counter " + m.name + " went from " + std::to_string(*m.before) + " to " +
              std::to_string(*now) + ", expected +" + std::to_string(at_least));
}

} // namespace metaroce::conformance
