// ECN AIMD with more paths than the window needs (spec 6.1, 6.2): each path carries a
// packet or none, so path windows cannot act on marks; the connection window must.
#include <catch2/catch.hpp>

#include <array>

#include "metaroce/congestion.hpp"

using namespace metaroce;

namespace {

ack_sample ack(uint64_t now, uint32_t path_out, bool marked)
{
    ack_sample s;
    s.now_ns = now;
    s.newly_acked = 1;
    s.rx_pkts = 1;
    s.ce_pkts = marked ? 1 : 0;
    s.rtt_ns = 10'000;
    s.srtt_ns = 10'000;
    s.path_min_rtt_ns = 10'000;
    s.min_rtt_ns = 10'000;
    s.packet_bytes = 4096;
    s.path_inflight = path_out;
    return s;
}

// One connection round past slow start: four paths report, the last marked while it
// had `marked_path_out` packets out; returns the connection window after the round.
double conn_window_after_round(uint32_t marked_path_out)
{
    cc_config cfg;
    const ecn_aimd cc(cfg);
    conn_cc_state c;
    cc.init(c);
    c.acked = true;
    c.slow_start = false;
    c.cwnd = 64;
    c.round_end_ns = 10'000;
    std::array<path_cc_state, 4> p{};
    for (path_cc_state& q : p) {
        cc.init(q);
        q.round_end_ns = 1'000'000; // no path round ends here
    }
    for (uint32_t i = 0; i < 3; ++i) {
        cc.on_ack(p[i], c, ack(1'000 + i, 1, false));
    }
    cc.on_ack(p[3], c, ack(2'000, marked_path_out, true));
    cc.on_ack(p[0], c, ack(10'000, 1, false)); // ends the round
    return c.cwnd;
}

} // namespace

TEST_CASE("a mark on a path with only its floor out cuts the connection window", "[cc][many_paths]")
{
    // One path in four marked: not most of them, yet that path's window (8, one packet
    // out) cannot slow it, so the connection takes the cut.
    CHECK(conn_window_after_round(1) < 64);
    // The same mark on a path whose window binds (7 of 8 out) trims that path only;
    // the connection grows by its step (16).
    CHECK(conn_window_after_round(7) == Approx(80));
}

TEST_CASE("slow start ended by a mark no path can act on starts alpha at 1/2", "[cc][many_paths]")
{
    cc_config cfg;
    const ecn_aimd cc(cfg);
    for (const uint32_t out : {1u, 7u}) {
        path_cc_state p;
        conn_cc_state c;
        cc.init(p);
        cc.init(c);
        cc.on_ack(p, c, ack(1'000, 1, false));
        REQUIRE(c.slow_start);
        cc.on_ack(p, c, ack(2'000, out, true));
        CHECK_FALSE(c.slow_start);
        if (out == 1) {
            CHECK(c.alpha >= 0.45); // the round's end may have folded in one fraction
        } else {
            CHECK(c.alpha < 0.1); // a path with its window in use: DCTCP's usual climb
        }
    }
}
