// Lost ACKs (spec 3.6): each ACK repeats the cumulative point of the path acknowledged
// just before it, so a lost ACK costs no resend of data that arrived when another ACK
// follows; a wide connection, with one packet per path, has no later ACK on that path.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

struct outcome {
    uint64_t retransmits = 0;
    uint64_t tail_probes = 0;
    uint64_t also_acked = 0;
    uint64_t rx_duplicates = 0;
    bool landed = false;
};

// A 32-packet WRITE over 32 paths (a packet each); the k-th ACK from the receiver is lost.
outcome write_losing_ack(int k)
{
    transport_config t;
    t.paths = 32;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 32 * 4096, k_all_access, 4);
    buffer dst(h.b(), 32 * 4096, k_all_access);
    int acks = 0;
    h.filter = [&](captured& p) { return p.to == 0 && is_op(p, wire::opcode::ack) && ++acks == k; };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    REQUIRE(h.cq[0][0].status == wc_status::success);
    // Long enough for any timer the lost ACK could have left armed to fire.
    h.run_until([] { return false; }, 5'000'000);
    outcome o;
    o.retransmits = h.a().stats().retransmits;
    o.tail_probes = h.a().stats().tail_probes;
    o.also_acked = h.a().stats().rx_also_acked;
    o.rx_duplicates = h.b().stats().rx_duplicates;
    o.landed = first_mismatch(src.bytes, dst.bytes).empty();
    return o;
}

} // namespace

TEST_CASE("a lost ACK followed by another costs no resend", "[lost_acks]")
{
    // Not the first: it answers the connection's one blind packet, and nothing follows it
    // until the tail probe resends that packet.
    const int k = GENERATE(2, 5, 20);
    const outcome o = write_losing_ack(k);
    INFO("lost ACK #" << k);
    CHECK(o.landed);
    CHECK(o.also_acked >= 1);    // the next ACK said what the lost one would have
    CHECK(o.retransmits == 0);   // nothing that arrived was sent again
    CHECK(o.tail_probes == 0);
    CHECK(o.rx_duplicates == 0);
}

TEST_CASE("without any lost ACK, nothing is acknowledged twice over", "[lost_acks]")
{
    const outcome o = write_losing_ack(0);
    CHECK(o.landed);
    CHECK(o.retransmits == 0);
    CHECK(o.also_acked == 0); // repeats of points already acknowledged credit nothing
}
