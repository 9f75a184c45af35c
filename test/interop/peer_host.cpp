#include "peer_host.hpp"

#include <algorithm>
#include <stdexcept>

#include "engines/wr_tag.hpp"

namespace metaroce::interop {

using namespace engines;

namespace {

// The app's bounds (app/metaroce/engine_host.cpp), so both hosts ask the same of a peer.
constexpr uint64_t k_slot_budget = 4ull << 20;
constexpr uint64_t k_max_area = 64ull << 20;

uint64_t area_bytes(bool bw, uint64_t size, uint64_t slots)
{
    return bw ? slots * size : 2 * size; // latency: the message, then its echo
}

} // namespace

bool drive_report::ok() const noexcept
{
    const bool checked = local_checked || (answered && verdict.state != verdict_state::not_checked);
    return messages > 0 && errors == 0 && failure.empty() && answered && checked && local_bad == 0 &&
           verdict.bad == 0 && verdict.state != verdict_state::mismatch;
}

peer_host::peer_host(endpoint& ep, conn_id c, uint64_t message_size, uint32_t depth)
    : ep_(ep), conn_(c), size_(message_size), depth_(depth), ctrl_buf_(ctrl_channel::k_bytes)
{
    const auto mr = ep.memory().register_region(ctrl_buf_.data(), ctrl_buf_.size(), access::local_write);
    if (!mr) {
        throw std::runtime_error("cannot register the control buffer");
    }
    ctrl_mr_ = *mr;
    ctrl_ = ctrl_channel(ep, c, ctrl_buf_.data(), ctrl_mr_.va, ctrl_mr_.lkey);
    if (ctrl_.open() != post_result::ok) {
        throw std::runtime_error("cannot post the control receives");
    }
}

bool peer_host::ensure(area& a, uint64_t bytes)
{
    if (a.bytes.size() >= bytes) {
        return true;
    }
    if (a.mr.lkey != 0) {
        ep_.memory().deregister(a.mr.lkey);
        a.mr = {};
    }
    a.bytes.assign(bytes, 0);
    const auto mr = ep_.memory().register_region(a.bytes.data(), bytes,
                                                 access::local_write | access::remote_write | access::remote_read);
    if (!mr) {
        a.bytes.clear();
        return false;
    }
    a.mr = *mr;
    return true;
}

engine_setup peer_host::setup_of(const area& a) const
{
    engine_setup s = setup_over(ep_, {conn_}, a.mr);
    s.keep_samples = false;
    return s;
}

bool peer_host::start_run(test_kind t, uint64_t now_ns)
{
    const bool bw = is_bw(t);
    const uint64_t slots = bw ? std::clamp<uint64_t>(k_slot_budget / size_, 1, depth_) : 1;
    test_ = t;
    phase_ = phase::idle;
    answered_ = false;
    verdict_ = {};
    if (!ensure(mine_, area_bytes(bw, size_, slots))) {
        return false;
    }
    setup_ = setup_of(mine_);
    setup_.size = size_;
    setup_.slots = uint32_t(slots);
    setup_.depth = bw ? depth_ : 1;
    setup_.echo_offset = size_;
    active_ = make_engine(t, role::active);
    if (ctrl_.send(start_msg(t, setup_, mine_.mr.va + size_, mine_.mr.rkey), now_ns) != post_result::ok) {
        return false;
    }
    phase_ = phase::starting;
    return true;
}

void peer_host::stop_run(uint64_t now_ns)
{
    stop_ns_ = now_ns;
    if (phase_ == phase::running) {
        active_->stop();
        phase_ = phase::draining;
    } else if (phase_ == phase::starting) {
        phase_ = phase::ended; // the peer never got ready: nothing ran
    }
}

drive_report peer_host::report() const
{
    drive_report r;
    r.test = test_;
    r.answered = answered_;
    r.verdict = verdict_;
    r.run_ns = stop_ns_ > ready_ns_ ? stop_ns_ - ready_ns_ : 0;
    if (active_) {
        const engine_result& e = active_->result();
        r.messages = e.iterations;
        r.bytes = e.bytes;
        r.errors = e.errors;
        r.failure = active_->failure();
        r.local_checked = e.checked;
        r.local_bad = e.bad_bytes + e.bad_lengths;
    }
    return r;
}

void peer_host::pump(uint64_t now_ns)
{
    if (passive_) {
        passive_->pump(now_ns);
    }
    if (phase_ == phase::running || phase_ == phase::draining) {
        active_->pump(now_ns);
        if (phase_ == phase::draining && active_->finished()) {
            end_run(now_ns);
        }
    }
}

void peer_host::end_run(uint64_t now_ns)
{
    active_->verify(0);
    if (ctrl_.send(done_msg(*active_), now_ns) == post_result::ok) {
        phase_ = phase::ending;
    }
}

void peer_host::on_completion(const completion& c, uint64_t now_ns)
{
    if (c.conn != conn_) {
        return;
    }
    const wr_kind kind = wr_tag::of(c.wr_id).kind;
    if (is_ctrl(kind)) {
        ctrl_msg m;
        if (ctrl_.on_completion(c, m) == ctrl_channel::got::message) {
            on_message(m, now_ns);
        }
    } else if (is_active(kind) && active_) {
        active_->on_completion(c, now_ns);
    } else if (is_passive(kind) && passive_) {
        passive_->on_completion(c, now_ns);
    }
}

void peer_host::on_message(const ctrl_msg& m, uint64_t now_ns)
{
    switch (m.type) {
    case ctrl_type::start: serve(m, now_ns); break;
    case ctrl_type::ready:
        if (phase_ == phase::starting) {
            setup_.remote_va = m.va.host();
            setup_.rkey = m.rkey.host();
            active_->start(setup_);
            phase_ = active_->failure().empty() ? phase::running : phase::ended;
            ready_ns_ = now_ns;
        }
        break;
    case ctrl_type::done:
        if (passive_) {
            for (const ctrl_msg& a : answer_done(*passive_, m, true)) {
                ctrl_.send(a, now_ns);
                if (a.type == ctrl_type::verdict) {
                    const engine_result& e = passive_->result();
                    served_.push_back(serve_report{passive_->kind(), m.iters.host(), e.iterations, e.errors,
                                                   read_verdict(a)});
                }
            }
        }
        break;
    case ctrl_type::more:
        if (phase_ == phase::ending) {
            apply_more(*active_, m);
            phase_ = phase::draining;
        }
        break;
    case ctrl_type::verdict:
        if (phase_ == phase::ending) {
            verdict_ = read_verdict(m);
            answered_ = true;
            phase_ = phase::ended;
        }
        break;
    case ctrl_type::region:
    case ctrl_type::bye: break;
    }
}

void peer_host::serve(const ctrl_msg& start, uint64_t now_ns)
{
    const auto t = test_of(start);
    const uint64_t size = start.size.host();
    const uint64_t slots = start.slots.host();
    if (!t || size == 0 || slots == 0 || size > k_max_area || slots > k_max_area / size ||
        !ensure(theirs_, area_bytes(is_bw(*t), size, slots))) {
        return; // no ready: the peer's run never starts
    }
    passive_ = make_engine(*t, role::passive);
    passive_->start(passive_setup(start, setup_of(theirs_)));
    if (!passive_->failure().empty()) {
        passive_.reset();
        return;
    }
    ctrl_msg r = make_ctrl(ctrl_type::ready);
    r.va = wire::be64_t::from_host(theirs_.mr.va);
    r.rkey = wire::be32_t::from_host(theirs_.mr.rkey);
    r.len = wire::be64_t::from_host(theirs_.bytes.size());
    if (ctrl_.send(r, now_ns) == post_result::ok) {
        ++serving_started_;
        serving_test_ = *t;
    }
}

} // namespace metaroce::interop
