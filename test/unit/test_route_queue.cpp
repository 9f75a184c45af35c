// A path whose route queues where the connection's other paths do not (a slow long-haul
// link) keeps one packet out while the others carry the data (spec 5.3).
#include <catch2/catch.hpp>

#include <algorithm>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

TEST_CASE("a path that queues on its own route keeps one packet out while the others have room",
          "[paths][queue]")
{
    // Two connections share B's 10 Gb/s: each is paced at its share, and its paths' windows
    // have room, so round robin alone would give path 0 a quarter of the packets.
    transport_config t;
    t.paths = 4;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.inbound_capacity_mbps = 10'000;
    pair_harness h(ca, cb, 1000);
    const conn_id c = h.connect();
    const conn_id other = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), other); }));
    // Path 0's data waits 200 us on its way, every packet: a queue on its route only.
    h.filter = [](captured& p) {
        if (p.to == 1 && is_data(p) && p.view().path == 0) {
            p.deliver_at += 200'000;
        }
        return false;
    };
    constexpr size_t len = 4 << 20;
    buffer src(h.a(), len, k_all_access, 7);
    buffer d1(h.b(), len, k_all_access);
    buffer d2(h.b(), len, k_all_access);
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(other, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    uint64_t told = 0; // when path 0's RTT first told the queue
    REQUIRE(h.run_until([&] {
        const auto ci = h.a().inspect(c);
        uint64_t fastest = UINT64_MAX;
        for (const path_info& p : ci->path) {
            fastest = std::min(fastest, p.srtt_ns != 0 ? p.srtt_ns : UINT64_MAX);
        }
        if (told == 0 && ci->path[0].srtt_ns > fastest + 100'000) {
            told = h.now();
        }
        return h.cq[0].size() == 2;
    }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
    REQUIRE(told != 0);
    REQUIRE(h.a().inspect(c)->rate_hint_mbps != 0);
    // From then on path 0 of each connection has one packet out at a time: one per
    // 200 us round trip (the other connection's path 0 queues alike).
    uint64_t late = 0;
    uint64_t total = 0;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p) && p.deliver_at > told + 400'000 + h.delay()) {
            ++total;
            late += p.view().path == 0 ? 1 : 0;
        }
    }
    CHECK(late <= 2 * ((h.now() - told) / 200'000 + 2));
    CHECK(late * 20 < total);
}
