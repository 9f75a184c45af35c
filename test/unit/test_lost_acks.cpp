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

namespace {

struct ack_copies_outcome {
    uint64_t copies = 0;               // the receiver's tx_ack_copies
    uint64_t copies_seen = 0;          // ACKs on the wire equal to the one before but for BTH.plane...
    uint64_t copies_rerouted = 0;      // ...and on another route
    uint64_t sender_timeouts = 0;
    bool landed = false;
};

// An 8 MiB WRITE over 8 paths; every `drop_every`-th first transmission of data is lost
// (0: none), so the receiver sees resends among its arrivals. With `drop_originals`,
// once copies flow, ACKs that are not copies are lost too (all but one in 16).
ack_copies_outcome write_under_loss(int drop_every, bool drop_originals = false)
{
    transport_config t;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 8 << 20, k_all_access, 6);
    buffer dst(h.b(), 8 << 20, k_all_access);
    ack_copies_outcome o;
    ack_copy_spotter spotter;
    uint16_t last_sport = 0;
    int firsts = 0;
    h.filter = [&](captured& p) {
        if (p.to == 0 && is_op(p, wire::opcode::ack)) {
            const bool copy = spotter.is_copy(p);
            if (copy) {
                ++o.copies_seen;
                o.copies_rerouted += p.frame.udp_sport != last_sport;
            }
            last_sport = p.frame.udp_sport;
            return drop_originals && !copy && h.b().stats().tx_ack_copies > 0 &&
                   h.b().stats().tx_ack_copies % 16 != 0; // an original now and then passes
        }
        return p.to == 1 && is_data(p) && (p.view().flags & wire::bth_flag::retx) == 0 &&
               drop_every != 0 && ++firsts % drop_every == 0;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    o.landed = first_mismatch(src.bytes, dst.bytes).empty();
    o.copies = h.b().stats().tx_ack_copies;
    o.sender_timeouts = h.a().stats().timeouts;
    return o;
}

} // namespace

TEST_CASE("under loss each ACK goes twice, the copy on another path's route", "[lost_acks]")
{
    const ack_copies_outcome o = write_under_loss(10);
    CHECK(o.landed);
    CHECK(o.copies > 0);
    CHECK(o.copies_seen == o.copies); // byte for byte the ACK before it, but for BTH.plane
    CHECK(o.copies_rerouted == o.copies);
}

TEST_CASE("loss-free, no ACK is copied", "[lost_acks]")
{
    const ack_copies_outcome o = write_under_loss(0);
    CHECK(o.landed);
    CHECK(o.copies == 0);
    CHECK(o.copies_seen == 0);
}

TEST_CASE("an ACK's copy stands in for the ACK: its originals lost, the transfer still completes without timeouts",
          "[lost_acks]")
{
    const ack_copies_outcome o = write_under_loss(10, true);
    CHECK(o.landed);
    CHECK(o.copies > 0);
    CHECK(o.sender_timeouts == 0);
}
