// Path and plane health (spec 5.8, 5.9) and receiver rate hints (spec 6.4).
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

transport_config two_planes()
{
    transport_config t;
    t.planes = 2;
    t.paths = 8;
    return t;
}

size_t paths_on(const conn_info& ci, uint8_t plane)
{
    size_t n = 0;
    for (const auto& p : ci.path) {
        n += p.plane == plane ? 1 : 0;
    }
    return n;
}

} // namespace

TEST_CASE("taking a plane down moves every path off it at once, and back when it returns", "[health][plane]")
{
    pair_harness h(two_planes());
    const conn_id c = h.connect();
    REQUIRE(paths_on(*h.a().inspect(c), 1) == 4);

    h.a().set_plane_admin(1, false, h.now());
    const auto down = *h.a().inspect(c);
    CHECK(paths_on(down, 1) == 0);
    CHECK(paths_on(down, 0) == 8);
    for (const auto& p : down.path) {
        CHECK(p.home_plane == p.index % 2); // where it goes back to
    }
    const auto planes = h.a().planes();
    REQUIRE(planes.size() == 2);
    CHECK_FALSE(planes[1].admin_up);
    CHECK(planes[1].paths == 0);

    // Traffic flows on plane 0 only while plane 1 is down, and the data is intact.
    buffer src(h.a(), 256 * 1024, k_all_access, 3);
    buffer dst(h.b(), 256 * 1024, k_all_access);
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p)) {
            CHECK(p.frame.plane == 0);
        }
    }

    h.a().set_plane_admin(1, true, h.now());
    const auto up = *h.a().inspect(c);
    CHECK(paths_on(up, 1) == 4);
    CHECK(h.a().planes()[1].admin_up);
}

TEST_CASE("a dead plane is detected, its paths leave it, and it is re-admitted by probes", "[health][plane]")
{
    transport_config t = two_planes();
    pair_harness h(t);
    const conn_id c = h.connect();
    bool plane1_dead = true;
    h.filter = [&](captured& p) { return plane1_dead && p.frame.plane == 1; };
    buffer src(h.a(), 1 << 20, k_all_access, 5);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().conn_errors == 0);
    CHECK(h.a().stats().plane_downs == 1);
    CHECK_FALSE(h.a().planes()[1].detected_up);
    CHECK(h.a().planes()[1].admin_up); // nobody told it: it found out
    CHECK(paths_on(*h.a().inspect(c), 1) == 0);

    // The plane heals: a probe gets through and the paths go home.
    plane1_dead = false;
    h.sent.clear();
    REQUIRE(h.run_until([&] { return h.a().planes()[1].detected_up; }, 50'000'000));
    CHECK(h.a().stats().plane_ups == 1);
    bool probed_plane1 = false;
    for (const captured& p : h.sent) {
        probed_plane1 = probed_plane1 || (is_op(p, wire::opcode::probe) && p.frame.plane == 1);
    }
    CHECK(probed_plane1);
    CHECK(paths_on(*h.a().inspect(c), 1) == 4);
}

TEST_CASE("a failed path takes a new route and is probed before it carries data again", "[health][path]")
{
    transport_config t;
    t.paths = 4;
    pair_harness h(t);
    const conn_id c = h.connect();
    // Path 2's first two routes are black holes: two timeouts fail the path.
    std::vector<uint16_t> routes; // in the order path 2's data used them
    h.filter = [&](captured& p) {
        if (p.to != 1 || p.view().path != 2 || is_op(p, wire::opcode::probe)) {
            return false;
        }
        if (std::find(routes.begin(), routes.end(), p.frame.udp_sport) == routes.end()) {
            routes.push_back(p.frame.udp_sport);
        }
        return routes.size() <= 2;
    };
    buffer src(h.a(), 512 * 1024, k_all_access, 9);
    buffer dst(h.b(), 512 * 1024, k_all_access);
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    REQUIRE(routes.size() >= 3);
    // After the second route died, path 2 sent a PROBE on a third port, and data went
    // on it only after the PROBE_ACK came back.
    size_t probe = 0, probe_ack = 0, data_after = 0;
    uint16_t probed_port = 0;
    for (size_t i = 0; i < h.sent.size(); ++i) {
        const captured& p = h.sent[i];
        if (probe == 0 && p.to == 1 && is_op(p, wire::opcode::probe) && p.view().path == 2) {
            probe = i;
            probed_port = p.frame.udp_sport;
        }
        if (probe != 0 && probe_ack == 0 && p.to == 0 && is_op(p, wire::opcode::probe_ack)) {
            probe_ack = i;
        }
        if (probe != 0 && data_after == 0 && p.to == 1 && is_data(p) && p.view().path == 2) {
            data_after = i;
        }
    }
    REQUIRE(probe != 0);
    CHECK(probed_port != routes[0]); // not one of the dead routes
    CHECK(probed_port != routes[1]);
    REQUIRE(data_after != 0);
    CHECK(probe_ack != 0);
    CHECK(probe_ack < data_after);
    CHECK(h.sent[data_after].frame.udp_sport == probed_port);
    // Between the failure and the probe's answer, no data went out on path 2.
    for (size_t i = probe; i < probe_ack; ++i) {
        const captured& p = h.sent[i];
        CHECK_FALSE((p.to == 1 && is_data(p) && p.view().path == 2));
    }
    CHECK(h.a().stats().probes_sent >= 1);
    CHECK(h.a().inspect(c)->path[2].state != path_state::failed);
}

TEST_CASE("a contended receiver puts each sender's share in its ACKs and senders follow it", "[health][hint]")
{
    transport_config t;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.inbound_capacity_mbps = 100'000;
    cb.hint_utilization = 0.9;
    pair_harness h(ca, cb, 1000);
    // Two connections from A: two senders contending for B.
    const conn_id c1 = h.connect();
    const conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c2); }));
    buffer src(h.a(), 1 << 20, k_all_access, 1);
    buffer d1(h.b(), 1 << 20, k_all_access);
    buffer d2(h.b(), 1 << 20, k_all_access);
    h.sent.clear();
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
    // ACKs carry an equal share of 90 % of 100 Gb/s, then (nothing marks) at most an
    // equal share of all of it.
    std::set<uint32_t> hints;
    for (const captured& p : h.sent) {
        if (p.to == 0 && is_op(p, wire::opcode::ack)) {
            hints.insert(p.view().ack->rate_hint_mbps.host());
        }
    }
    REQUIRE_FALSE(hints.empty());
    CHECK(hints.count(45'000) == 1);
    CHECK(*hints.rbegin() <= 50'000);
    // The sender took the hint: its window is capped by it.
    const auto i1 = *h.a().inspect(c1);
    CHECK(hints.count(i1.rate_hint_mbps) == 1);
}

TEST_CASE("a lone sender gets no hint", "[health][hint]")
{
    transport_config t;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.inbound_capacity_mbps = 100'000;
    pair_harness h(ca, cb, 1000);
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 1);
    buffer dst(h.b(), 1 << 20, k_all_access);
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    size_t acks = 0;
    for (const captured& p : h.sent) {
        if (p.to == 0 && is_op(p, wire::opcode::ack)) {
            ++acks;
            CHECK(p.view().ack->rate_hint_mbps.host() == 0);
        }
    }
    CHECK(acks > 0);
}

TEST_CASE("an ECN mark trims only the path that saw it", "[health][cc]")
{
    transport_config t;
    t.paths = 4;
    pair_harness h(t);
    const conn_id c = h.connect();
    // Every data packet on path 1 arrives CE-marked; the other paths are clear. Counted
    // on the wire: a path's own counters cover its current busy spell only (issue 12).
    uint64_t sent[4] = {};
    uint64_t acked_ce[4] = {};
    h.filter = [&](captured& p) {
        const wire::packet_view v = p.view();
        if (p.to == 1 && is_data(p) && v.path < 4) {
            ++sent[v.path];
            p.meta.ce = v.path == 1;
        }
        if (p.to == 0 && v.op == wire::opcode::ack && v.path < 4) {
            acked_ce[v.path] += v.ack->ce_pkts.host();
        }
        return false;
    };
    buffer src(h.a(), 4 << 20, k_all_access, 2);
    buffer dst(h.b(), 4 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    const auto info = *h.a().inspect(c);
    const double init = t.cc.path_cwnd_init;
    CHECK(info.path[1].cwnd < init);          // trimmed
    CHECK(acked_ce[1] > 0);
    for (uint32_t i : {0u, 2u, 3u}) {
        INFO("path " << i);
        CHECK(acked_ce[i] == 0);
        CHECK(info.path[i].cwnd > init);      // grew, untouched by path 1's marks
    }
    // Most packets went where there was room: the marked path carried the fewest.
    for (uint32_t i : {0u, 2u, 3u}) {
        CHECK(sent[1] < sent[i]);
    }
}

TEST_CASE("a path whose own route queues and marks gets new data only as it earns it", "[health][cc]")
{
    // Path 1's route holds a queue of its own (spec 5.3): its packets arrive CE-marked and
    // 200 us late (400 us base RTT), the other paths' on time and clear. Two connections share a 10 Gb/s
    // receiver, so each is paced at its hint and its path windows do not bind: round
    // robin alone gives path 1 as much as any other path.
    transport_config t;
    t.paths = 8;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.inbound_capacity_mbps = 10'000;
    pair_harness h(ca, cb, 200'000); // 400 us base RTT
    const conn_id c1 = h.connect();
    const conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c2); }));
    uint64_t sent[8] = {};
    bool paced = false; // c1 sent under a hint (before either connection drained)
    h.filter = [&](captured& p) {
        const wire::packet_view v = p.view();
        paced = paced || h.a().inspect(c1)->rate_hint_mbps != 0;
        if (p.to == 1 && is_data(p) && v.path < 8) {
            ++sent[v.path];
            if (v.path == 1) {
                p.meta.ce = true;
                p.deliver_at += 200'000;
            }
        }
        return false;
    };
    constexpr size_t k_bytes = 8 << 20;
    buffer src(h.a(), k_bytes, k_all_access, 3);
    buffer d1(h.b(), k_bytes, k_all_access);
    buffer d2(h.b(), k_bytes, k_all_access);
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
    CHECK(paced);
    uint64_t least_other = UINT64_MAX;
    for (uint32_t i = 0; i < 8; ++i) {
        if (i != 1) {
            least_other = std::min(least_other, sent[i]);
        }
    }
    INFO("path 1: " << sent[1] << " packets, the least of the others: " << least_other);
    CHECK(sent[1] > 0);                  // still measured
    CHECK(4 * sent[1] < least_other);
}

TEST_CASE("random loss that hits every path alike reroutes and fails none of them", "[health][loss]")
{
    transport_config t;
    t.paths = 8;
    t.rack = false; // RACK finds most of these losses first: this is about the timeouts left
    t.ack_every_bytes = 16384; // more ACKs, more of them lost: the timeouts this needs
    pair_harness h(t);
    const conn_id c = h.connect();
    xorshift rng{4242};
    // 10 % of every packet, both directions, data and ACKs alike. ACKs lose their repeat of
    // the previous one and their copies under loss (spec 3.6), which would spare most of
    // the timeouts this is about.
    ack_copy_spotter copies;
    h.filter = [&](captured& p) {
        if (is_op(p, wire::opcode::ack)) {
            if (copies.is_copy(p)) {
                return true;
            }
            p.bytes[3] &= uint8_t(~wire::bth_flag::also_acks);
        }
        return rng.next() % 100 < 10;
    };
    buffer src(h.a(), 8 << 20, k_all_access, 3);
    buffer dst(h.b(), 8 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().retransmits > 0);
    // Timeouts happen (a tail and its probe both lost), but they are chance, not a route.
    CHECK(h.a().stats().timeouts > 0);
    CHECK(h.a().stats().reroutes == 0);
    CHECK(h.a().stats().plane_downs == 0);
    const conn_info info = *h.a().inspect(c);
    for (const auto& p : info.path) {
        CHECK(p.state != path_state::failed);
    }
}

TEST_CASE("a connection's first packet lost three times times out without a reroute", "[health][loss]")
{
    // The blind first round trip carries one packet: it, its tail probe and the probe's
    // own probe (spec 5.6) all lost is chance (0.1 % at 10 % loss), and no other path has
    // sent enough to tell chance from a broken route, so the timeout does not count
    // against the route.
    transport_config t;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    int data = 0;
    h.filter = [&](captured& p) { return p.to == 1 && is_data(p) && ++data <= 3; };
    buffer src(h.a(), 256 << 10, k_all_access, 3);
    buffer dst(h.b(), 256 << 10, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().timeouts == 1);
    CHECK(h.a().stats().reroutes == 0);
    const conn_info info = *h.a().inspect(c);
    for (const auto& p : info.path) {
        CHECK(p.state == path_state::good);
    }
}

namespace {

// 8 paths losing 10 % everywhere, warmed by 1 MiB; then path 3's current route (`dead`)
// drops everything on top of the random loss, and 4 MiB (src -> dst) are posted.
struct dead_route_under_loss {
    pair_harness h{[] {
        transport_config t;
        t.paths = 8;
        return t;
    }()};
    conn_id c = h.connect();
    xorshift rng{777};
    buffer src{h.a(), 4 << 20, k_all_access, 6};
    buffer dst{h.b(), 4 << 20, k_all_access};
    uint16_t dead = 0;

    dead_route_under_loss()
    {
        buffer warm(h.a(), 1 << 20, k_all_access, 5);
        buffer warm_dst(h.b(), 1 << 20, k_all_access);
        h.filter = [this](captured&) { return rng.next() % 100 < 10; };
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, warm, warm_dst, 1), h.now()) == post_result::ok);
        REQUIRE(h.run_until([&] { return h.cq[0].size() == 1; }));
        dead = h.a().inspect(c)->path[3].udp_sport;
        h.filter = [this](captured& p) {
            return (p.to == 1 && p.frame.udp_sport == dead) || rng.next() % 100 < 10;
        };
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2), h.now()) == post_result::ok);
    }
};

} // namespace

TEST_CASE("under random loss a path that loses everything is still rerouted", "[health][loss]")
{
    dead_route_under_loss d;
    pair_harness& h = d.h;
    const conn_id c = d.c;
    const uint16_t dead = d.dead;
    const buffer& src = d.src;
    const buffer& dst = d.dst;
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(h.cq[0][1].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().reroutes >= 1);
    CHECK(h.a().inspect(c)->path[3].udp_sport != dead);
}

TEST_CASE("a client reading from several connections at once hints each responder its share", "[health][hint]")
{
    transport_config t;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    ca.inbound_capacity_mbps = 100'000; // A is the one the READ data converges on
    ca.hint_utilization = 0.9;
    pair_harness h(ca, cb, 1000);
    std::vector<conn_id> conns{h.connect()};
    for (int i = 1; i < 4; ++i) {
        conns.push_back(h.a().connect(pair_harness::k_addr_b, h.now()));
    }
    const auto all_up = [&] {
        return std::all_of(conns.begin(), conns.end(),
                           [&](conn_id c) { return pair_harness::established(h.a(), c); });
    };
    REQUIRE(h.run_until(all_up));
    buffer remote(h.b(), 1 << 20, k_all_access, 9);
    std::vector<std::unique_ptr<buffer>> local;
    h.sent.clear();
    for (size_t i = 0; i < conns.size(); ++i) {
        local.push_back(std::make_unique<buffer>(h.a(), 1 << 20, k_all_access));
        REQUIRE(h.a().post_send(conns[i], make_wr(wr_opcode::read, *local.back(), remote, i), h.now()) ==
                post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == conns.size(); }));
    for (const auto& l : local) {
        CHECK(first_mismatch(remote.bytes, l->bytes).empty());
    }
    // A's ACKs of READ responses carry its share for each responder connection: a
    // quarter of 90 % of 100 Gb/s from the first response on (all four were expected),
    // then at most a quarter of all of it (the headroom is lent while nothing marks).
    std::set<uint32_t> hints;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_op(p, wire::opcode::ack)) {
            hints.insert(p.view().ack->rate_hint_mbps.host());
        }
    }
    REQUIRE_FALSE(hints.empty());
    CHECK(hints.count(22'500) == 1);
    CHECK(*hints.begin() >= 22'500);
    CHECK(*hints.rbegin() <= 25'000);
    // The responder took it: it paces its responses under it.
    CHECK(hints.count(h.b().inspect(h.peer_conn())->rate_hint_mbps) == 1);
}

TEST_CASE("a hint at a tiny RTT still keeps the pipe full while paced", "[health][hint]")
{
    // RTT 2 us: a 4.5 Gb/s share is about half a packet per RTT. The window under the hint
    // must still let pacing catch up after a late wake-up, and pacing must not fall to
    // one packet per wake-up.
    transport_config t;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.inbound_capacity_mbps = 10'000;
    cb.hint_utilization = 0.9;
    pair_harness h(ca, cb, 1000);
    const conn_id c1 = h.connect();
    const conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c2); }));
    // Timers are seen every 20 us (a poll loop that also serves other work): longer than
    // the 7.4 us pacing gap, so one packet per wake-up would be a third of the share.
    h.timer_tick_ns = 20'000;
    constexpr size_t k_bytes = 1 << 20;
    buffer src(h.a(), k_bytes, k_all_access, 1);
    buffer d1(h.b(), k_bytes, k_all_access);
    buffer d2(h.b(), k_bytes, k_all_access);
    const uint64_t t0 = h.now();
    uint32_t hint = 0; // c1's latest share while both connections were sending
    h.filter = [&](captured&) {
        const uint32_t now_hint = h.a().inspect(c1)->rate_hint_mbps;
        hint = now_hint != 0 ? now_hint : hint;
        return false;
    };
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
    // An equal share of 9 Gb/s, less what the receiver reads as queueing in the jitter
    // the coarse wake-ups add to one-way delays (spec 6.4).
    CHECK(hint > 2'000);
    CHECK(hint <= 4'500);
    // 2 MiB at up to 9 Gb/s take 1.9 ms; allow for the blind first RTT and framing.
    const double secs = double(h.now() - t0) * 1e-9;
    const double gbps = 2.0 * k_bytes * 8 / secs / 1e9;
    INFO("goodput " << gbps << " Gb/s");
    CHECK(gbps > 6.0);
    CHECK(h.a().stats().timeouts == 0);
}

TEST_CASE("new data avoids a plane whose port is backed up while another has room", "[health][plane]")
{
    // A driver that says a port is backed up (tx_frame::busy_planes, spec 5.3) gets new
    // data on the other planes: one full port must not hold the node's other ports idle.
    pair_harness h(two_planes());
    const conn_id c = h.connect();
    buffer src(h.a(), 256 * 1024, k_all_access, 5);
    buffer dst(h.b(), 256 * 1024, k_all_access);
    h.sent.clear();
    h.busy_planes[0] = 1u << 1;
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    size_t on[2] = {0, 0};
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p)) {
            ++on[p.frame.plane];
        }
    }
    CHECK(on[1] == 0);
    CHECK(on[0] == 64); // 256 KiB in 4 KiB packets, none resent

    // Both ports backed up: the data still goes, spread over both (no stall).
    h.sent.clear();
    h.busy_planes[0] = 3;
    h.cq[0].clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    on[0] = on[1] = 0;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p)) {
            ++on[p.frame.plane];
        }
    }
    CHECK(on[0] > 0);
    CHECK(on[1] > 0);
}

TEST_CASE("a set-up whose first plane loses everything connects on the next one", "[health][plane][handshake]")
{
    // Plane 0 drops every packet both ways (dead, not yet detected: no connection runs
    // there to tell). CONNECT retries past the first few take the next plane (spec 7.3)
    // and ACCEPT goes back on the route of the CONNECT it answers.
    pair_harness h(two_planes());
    h.filter = [](captured& p) { return p.frame.plane == 0; };
    const conn_id c = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c); }, 50'000'000));
    bool accept_on_1 = false;
    for (const captured& p : h.sent) {
        accept_on_1 = accept_on_1 || (is_op(p, wire::opcode::accept) && p.frame.plane == 1);
    }
    CHECK(accept_on_1);
    CHECK(h.a().stats().conn_errors == 0);
}

TEST_CASE("timeouts that random loss explains do not back the path's timer off", "[health][loss]")
{
    // The connection loses 10 % everywhere; then path 3's route loses everything. Its
    // first timeouts are within the loss slack (spec 5.6): chance, not congestion, so the
    // retransmission timer stays at one RTO instead of doubling while the path waits.
    dead_route_under_loss d;
    pair_harness& h = d.h;
    const conn_id c = d.c;
    const uint16_t dead = d.dead;
    const buffer& src = d.src;
    const buffer& dst = d.dst;
    // When path 3 times out, while its route is still the dead one.
    std::vector<uint64_t> at;
    uint32_t seen = h.a().inspect(c)->path[3].timeouts;
    while (at.size() < 3 && h.cq[0].size() < 2 && h.a().inspect(c)->path[3].udp_sport == dead) {
        REQUIRE(h.run_until([&] {
            return h.a().inspect(c)->path[3].timeouts != seen || h.cq[0].size() == 2;
        }));
        const uint32_t now_timeouts = h.a().inspect(c)->path[3].timeouts;
        if (now_timeouts == seen + 1 && h.a().inspect(c)->path[3].udp_sport == dead) {
            at.push_back(h.now());
        }
        seen = now_timeouts;
    }
    REQUIRE(at.size() == 3);
    // Backed off, the second gap would be twice the first.
    CHECK(at[2] - at[1] < (at[1] - at[0]) * 3 / 2);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(h.cq[0][1].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
}
