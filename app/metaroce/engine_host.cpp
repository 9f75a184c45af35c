#include "engine_host.hpp"

#include <algorithm>

#include <cstdio>

#include "dp_io.hpp"
#include "engines/wr_tag.hpp"

namespace metaroce::app {

using namespace engines;

namespace {

constexpr uint32_t k_test_conns = 32;            // connections that can run tests
constexpr uint64_t k_slot_budget = 4ull << 20;   // bandwidth slots of one area, in bytes
constexpr uint64_t k_max_area = 64ull << 20;     // what a peer's start may ask us to set aside

uint64_t area_bytes(bool bw, uint64_t size, uint64_t slots)
{
    return bw ? slots * size : 2 * size; // latency: the message, then its echo
}

} // namespace

engine_host::engine_host(endpoint& ep, const app_config& cfg)
    : ep_(ep), message_size_(cfg.message_size), tx_depth_(cfg.tx_depth)
{
    ctrl_buf_ = dpdk::eal_buffer("mr_ctrl", k_test_conns * ctrl_channel::k_bytes, -1);
    const auto mr = ep.memory().register_region(ctrl_buf_.data(), ctrl_buf_.size(), access::local_write);
    if (!mr) {
        throw dpdk::dpdk_error("cannot register the control buffer");
    }
    ctrl_mr_ = *mr;
}

void engine_host::on_event(const conn_event& e, uint64_t now_ns)
{
    if (e.what == conn_event::kind::established) {
        open(e.conn, now_ns);
    } else {
        close(e.conn);
    }
}

void engine_host::open(conn_id c, uint64_t now_ns)
{
    if (peers_.size() >= k_test_conns) {
        return; // carried, but no test on it
    }
    std::vector<bool> used(k_test_conns, false);
    for (const auto& [id, p] : peers_) {
        used[p.slot] = true;
    }
    peer p;
    p.slot = uint32_t(std::find(used.begin(), used.end(), false) - used.begin());
    const uint64_t off = p.slot * ctrl_channel::k_bytes;
    p.ctrl = ctrl_channel(ep_, c, ctrl_buf_.data() + off, ctrl_mr_.va + off, ctrl_mr_.lkey);
    if (p.ctrl.open() != post_result::ok) {
        return;
    }
    peer& in = peers_.emplace(c, std::move(p)).first->second;
    if (running_) {
        start_on(c, in, now_ns);
    }
}

void engine_host::close(conn_id c)
{
    const auto it = peers_.find(c);
    if (it == peers_.end()) {
        return;
    }
    for (const area* a : {&it->second.mine, &it->second.theirs}) {
        if (a->mr.lkey != 0) {
            ep_.memory().deregister(a->mr.lkey);
            forget(*a);
        }
    }
    peers_.erase(it);
}

void engine_host::forget(const area& a) noexcept
{
    if (io_ == nullptr) {
        return;
    }
    try {
        io_->mem_removed(a.buf.data());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce: %s\n", e.what());
    }
}

bool engine_host::ensure(area& a, uint64_t bytes)
{
    if (a.buf.size() >= bytes) {
        return true;
    }
    if (a.mr.lkey != 0) {
        ep_.memory().deregister(a.mr.lkey);
        forget(a);
        a.mr = {};
    }
    try {
        a.buf = dpdk::eal_buffer("mr_area", bytes, -1);
    } catch (const dpdk::dpdk_error&) {
        a.buf = {};
        return false;
    }
    const auto mr = ep_.memory().register_region(a.buf.data(), bytes,
                                                 access::local_write | access::remote_write | access::remote_read);
    if (!mr) {
        a.buf = {};
        return false;
    }
    a.mr = *mr;
    if (io_ != nullptr) {
        io_->mem_added(a.buf.data(), bytes);
    }
    return true;
}

engine_setup engine_host::setup_of(conn_id c, const area& a) const
{
    engine_setup s = setup_over(ep_, {c}, a.mr);
    s.keep_samples = false; // a run lasts until stop: keep the summary only
    return s;
}

size_t engine_host::start(uint64_t now_ns)
{
    running_ = true;
    start_ns_ = now_ns;
    for (auto& [c, p] : peers_) {
        start_on(c, p, now_ns);
    }
    return peers_.size();
}

void engine_host::start_on(conn_id c, peer& p, uint64_t now_ns)
{
    const bool bw = is_bw(test_);
    const uint64_t size = message_size_;
    const uint64_t slots = bw ? std::clamp<uint64_t>(k_slot_budget / size, 1, tx_depth_) : 1;
    p.state = phase::idle;
    p.active.reset();
    p.answered = false;
    p.local_bad = 0;
    p.local_checked = false;
    if (!ensure(p.mine, area_bytes(bw, size, slots))) {
        return;
    }
    p.setup = setup_of(c, p.mine);
    p.setup.size = size;
    p.setup.slots = uint32_t(slots);
    p.setup.depth = bw ? tx_depth_ : 1;
    p.setup.echo_offset = size;
    p.active = make_engine(test_, role::active);
    if (p.ctrl.send(start_msg(test_, p.setup, p.mine.mr.va + size, p.mine.mr.rkey), now_ns) == post_result::ok) {
        p.state = phase::starting;
    }
}

run_stats engine_host::stop(uint64_t now_ns)
{
    running_ = false;
    run_stats r;
    r.test = test_;
    r.start_ns = start_ns_;
    r.stop_ns = now_ns;
    for (auto& [c, p] : peers_) {
        if (p.state != phase::running) {
            continue;
        }
        const engine_result& e = p.active->result();
        r.messages += e.iterations;
        r.bytes += e.bytes;
        r.errors += e.errors + (p.active->failure().empty() ? 0 : 1);
        if (e.latency.count != 0) {
            r.latency.min_us = r.latency.count == 0 ? e.latency.min_us : std::min(r.latency.min_us, e.latency.min_us);
            r.latency.max_us = std::max(r.latency.max_us, e.latency.max_us);
            r.latency.sum_us += e.latency.sum_us;
            r.latency.count += e.latency.count;
        }
        p.active->stop();
        p.state = phase::draining;
    }
    return r;
}

void engine_host::pump(uint64_t now_ns)
{
    for (auto& [c, p] : peers_) {
        if (p.passive) {
            p.passive->pump(now_ns);
        }
        if (p.state == phase::running || p.state == phase::draining) {
            p.active->pump(now_ns);
            if (p.state == phase::draining && p.active->finished()) {
                end_run(p, now_ns);
            }
        }
    }
}

void engine_host::end_run(peer& p, uint64_t now_ns)
{
    p.active->verify(0);
    p.local_bad = p.active->result().bad_bytes + p.active->result().bad_lengths;
    p.local_checked = p.active->result().checked;
    if (p.ctrl.send(done_msg(*p.active), now_ns) == post_result::ok) {
        p.state = phase::ending;
    }
}

void engine_host::on_completion(const completion& c, uint64_t now_ns)
{
    const auto it = peers_.find(c.conn);
    if (it == peers_.end()) {
        return; // a connection that has gone
    }
    peer& p = it->second;
    const wr_kind kind = wr_tag::of(c.wr_id).kind;
    if (is_ctrl(kind)) {
        ctrl_msg m;
        if (p.ctrl.on_completion(c, m) == ctrl_channel::got::message) {
            on_message(c.conn, p, m, now_ns);
        }
    } else if (is_active(kind) && p.active) {
        p.active->on_completion(c, now_ns);
    } else if (is_passive(kind) && p.passive) {
        p.passive->on_completion(c, now_ns);
    }
}

void engine_host::on_message(conn_id c, peer& p, const ctrl_msg& m, uint64_t now_ns)
{
    switch (m.type) {
    case ctrl_type::start: serve(c, p, m, now_ns); break;
    case ctrl_type::ready:
        if (p.state == phase::starting) {
            p.setup.remote_va = m.va.host();
            p.setup.rkey = m.rkey.host();
            p.active->start(p.setup);
            p.state = p.active->failure().empty() ? phase::running : phase::ended;
            if (p.state == phase::running && !running_) {
                // Stopped before the peer was ready: still end the run with it, so its
                // receives are used up.
                p.active->stop();
                p.state = phase::draining;
            }
        }
        break;
    case ctrl_type::done:
        if (p.passive) {
            for (const ctrl_msg& a : answer_done(*p.passive, m, true)) {
                p.ctrl.send(a, now_ns);
            }
        }
        break;
    case ctrl_type::more:
        if (p.state == phase::ending) {
            apply_more(*p.active, m);
            p.state = phase::draining;
        }
        break;
    case ctrl_type::verdict:
        if (p.state == phase::ending) {
            p.verdict = read_verdict(m);
            p.answered = true;
            p.state = phase::ended;
        }
        break;
    case ctrl_type::region:
    case ctrl_type::bye: break;
    }
}

void engine_host::serve(conn_id c, peer& p, const ctrl_msg& start, uint64_t now_ns)
{
    const auto t = test_of(start);
    const uint64_t size = start.size.host();
    const uint64_t slots = start.slots.host();
    if (!t || size == 0 || slots == 0 || size > k_max_area || slots > k_max_area / size ||
        !ensure(p.theirs, area_bytes(is_bw(*t), size, slots))) {
        return; // no ready: the peer's run never starts
    }
    p.passive = make_engine(*t, role::passive);
    p.passive->start(passive_setup(start, setup_of(c, p.theirs)));
    if (!p.passive->failure().empty()) {
        p.passive.reset();
        return;
    }
    ctrl_msg r = make_ctrl(ctrl_type::ready);
    r.va = wire::be64_t::from_host(p.theirs.mr.va);
    r.rkey = wire::be32_t::from_host(p.theirs.mr.rkey);
    r.len = wire::be64_t::from_host(p.theirs.buf.size());
    p.ctrl.send(r, now_ns);
}

bool engine_host::ending() const noexcept
{
    return std::any_of(peers_.begin(), peers_.end(), [](const auto& e) {
        const phase s = e.second.state;
        return s == phase::starting || s == phase::draining || s == phase::ending;
    });
}

run_check engine_host::check() const noexcept
{
    run_check r;
    for (const auto& [c, p] : peers_) {
        if (p.state == phase::idle || !p.active) {
            continue;
        }
        ++r.conns;
        r.answered += p.answered;
        r.checked += p.local_checked || (p.answered && p.verdict.state != verdict_state::not_checked);
        r.bad_bytes += p.local_bad + (p.answered ? p.verdict.bad : 0);
    }
    return r;
}

} // namespace metaroce::app
