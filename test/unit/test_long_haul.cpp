// Long base RTTs (scale-across, spec 5.6, 6.1, 6.2, 6.4): first timers that know the
// round trip even when the handshake was resent, windows that grow by time rather than
// by round, admission at the hint's window, and a receiver that does not judge a far
// sender idle or limited before its round trip has passed.
#include <catch2/catch.hpp>

#include <algorithm>

#include "metaroce/congestion.hpp"
#include "metaroce/rate_allocator.hpp"
#include "pair_harness.hpp"
#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

TEST_CASE("a far peer behind a short CONNECT retry: no timer fires before the first samples",
          "[long_haul][timers]")
{
    transport_config t;
    t.connect_retry_ns = 30'000; // resent dozens of times before the first answer
    t.min_rto_ns = 30'000;
    t.paths = 16;
    pair_harness h(t, 1'000'000); // 1 ms one way
    const conn_id c = h.connect();
    // The CONNECT that carried the cookie told the acceptor the round trip it measured.
    uint32_t told_us = 0;
    for (const captured& k : h.sent) {
        const wire::packet_view v = k.view();
        if (v.op == wire::opcode::connect && v.hello != nullptr && v.hello->cookie.host() != 0) {
            told_us = v.hello->rtt_us.host();
        }
    }
    CHECK(told_us >= 2'000);
    CHECK(told_us < 2'100);
    buffer src(h.a(), 4 << 20, k_all_access, 3);
    buffer dst(h.b(), 4 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(dst.bytes == src.bytes);
    CHECK(h.a().stats().timeouts == 0);
    CHECK(h.a().stats().reroutes == 0);
    CHECK(h.a().stats().retransmits == 0);
}

namespace {

ack_sample unmarked(uint64_t now, uint64_t base_rtt_ns, uint32_t hint_mbps = 0)
{
    ack_sample s;
    s.now_ns = now;
    s.newly_acked = 1;
    s.rx_pkts = 1;
    s.rtt_ns = base_rtt_ns;
    s.srtt_ns = base_rtt_ns;
    s.path_min_rtt_ns = base_rtt_ns;
    s.min_rtt_ns = base_rtt_ns;
    s.rate_hint_mbps = hint_mbps;
    s.packet_bytes = 4096;
    return s;
}

} // namespace

TEST_CASE("an unmarked round adds one packet per reference RTT of base RTT", "[long_haul][cc]")
{
    cc_config cfg;
    ecn_aimd cc(cfg);
    for (const uint64_t rtt : {uint64_t(10'000), uint64_t(20'000), uint64_t(2'000'000)}) {
        path_cc_state p;
        conn_cc_state c;
        cc.init(p);
        cc.init(c);
        const double before = p.cwnd;
        cc.on_ack(p, c, unmarked(1'000'000, rtt)); // ends the path's first round
        const double want = rtt <= cfg.ai_reference_rtt_ns ? 1.0 : double(rtt) / double(cfg.ai_reference_rtt_ns);
        CHECK(p.cwnd - before == Approx(want));
    }
}

TEST_CASE("the first ACK under a hint admits the share's whole window", "[long_haul][cc]")
{
    cc_config cfg;
    ecn_aimd cc(cfg);
    path_cc_state p;
    conn_cc_state c;
    cc.init(p);
    cc.init(c);
    // 50 Gb/s over a 2 ms base RTT: 2 * 50e9/8 * 2e-3 / 4096 = 6,103 packets, far above
    // both the initial window and conn_cwnd_max.
    cc.on_ack(p, c, unmarked(2'000'000, 2'000'000, 50'000));
    CHECK(c.cwnd == Approx(6103.5).epsilon(0.01));
    CHECK_FALSE(c.slow_start);
    // The hint stops (the sender is alone now): the window is not cut to conn_cwnd_max.
    cc.on_ack(p, c, unmarked(5'000'000, 2'000'000, 0));
    CHECK(c.cwnd >= 6103);
}

TEST_CASE("a far sender silent between bursts keeps its share", "[long_haul][rates]")
{
    constexpr uint64_t epoch = 20'000;
    rate_allocator r(100'000, 0.9, epoch, 8);
    r.set_rtt(1, 2'000'000); // 2 ms away
    const auto burst = [&](uint32_t slot, uint64_t now) {
        r.on_packet(slot, 256 * 1024, false, now, 0, uint32_t(now - 1'000));
    };
    burst(0, 1'000);
    burst(1, 2'000);
    REQUIRE(r.hint_mbps(0) == 45'000);
    // The near sender keeps sending for 3 ms; the far one sends again only after its
    // round trip (the window-limited pattern).
    for (uint64_t t = epoch; t < 3'000'000; t += epoch) {
        burst(0, t);
        if (t == 2'000'000) {
            burst(1, t);
        }
    }
    CHECK(r.active() == 2);
    CHECK(r.hint_mbps(0) != 0);       // still shared (alone it would be "no hint")
    CHECK(r.hint_mbps(0) <= 50'000);  // at most half, the headroom lent included
    // A near sender as silent for as long has left.
    rate_allocator q(100'000, 0.9, epoch, 8);
    q.on_packet(0, 256 * 1024, false, 1'000, 0, 0);
    q.on_packet(1, 256 * 1024, false, 2'000, 0, 1'000);
    for (uint64_t t = epoch; t < 1'500'000; t += epoch) {
        q.on_packet(0, 256 * 1024, false, t, 0, uint32_t(t - 1'000));
    }
    CHECK(q.active() == 1);
}

TEST_CASE("a COOKIE restarts the CONNECT retry schedule", "[long_haul][handshake]")
{
    transport_config t;
    t.connect_retry_ns = 30'000; // four CONNECTs go out before the first COOKIE is back
    pair_harness h(t, 115'000);  // 230 us round trip: CONNECTs at 0, 30, 90, 210, then 450
    bool dropped = false;
    uint64_t cookie_at = 0;
    h.filter = [&](captured& k) {
        const wire::packet_view v = k.view();
        if (v.op == wire::opcode::cookie && cookie_at == 0) {
            cookie_at = k.deliver_at;
        }
        // The first CONNECT that carries the cookie is lost.
        if (v.op == wire::opcode::connect && v.hello->cookie.host() != 0 && !dropped) {
            dropped = true;
            return true;
        }
        return false;
    };
    const conn_id c = h.connect();
    REQUIRE(dropped);
    REQUIRE(pair_harness::established(h.a(), c));
    // Resent one connect_retry after the COOKIE (at 230 us), not at 450 us on the schedule
    // the first CONNECTs had backed off to, then one round trip to the ACCEPT.
    CHECK(h.now() <= cookie_at + 30'000 + 230'000 + 1'000);
}

TEST_CASE("admitted under a share, every path starts from its part of the share's window",
          "[long_haul][cc]")
{
    // B shares 100 Gb/s between two connections from A, 1 ms away: a 45 Gb/s share is
    // ~5,500 packets over the 2 ms round trip, ~340 per path of 16; a path's initial
    // window is 8. Without the spread the paths grow to it one 2 ms round trip at a time.
    transport_config t;
    t.paths = 16;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.inbound_capacity_mbps = 100'000;
    cb.hint_utilization = 0.9;
    pair_harness h(ca, cb, 1'000'000);
    const conn_id c1 = h.connect();
    const conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c2); }));
    constexpr size_t k_bytes = 8 << 20;
    buffer src(h.a(), k_bytes, k_all_access, 5);
    buffer d1(h.b(), k_bytes, k_all_access);
    buffer d2(h.b(), k_bytes, k_all_access);
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    // Just after the first hinted ACK: the connection window holds the share.
    REQUIRE(h.run_until([&] { return h.a().inspect(c1)->rate_hint_mbps != 0; }));
    const conn_info ci = *h.a().inspect(c1);
    REQUIRE(ci.conn_cwnd > 16 * 100);
    const double part = std::min(double(wire::k_sack_bits), ci.conn_cwnd / 16);
    for (const path_info& p : ci.path) {
        CHECK(p.cwnd >= part - 1);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
}
