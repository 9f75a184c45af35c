// Loss detection across the paths of a connection (spec 5.5, RACK): on a wide
// connection every path carries one packet, so the per-path SACK rule never sees a gap;
// a packet sent before one that was delivered on another path is lost once a round trip
// and the reorder window have passed, and is resent without a timeout or a tail probe.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// A 32-packet WRITE over wide_paths(): each packet has a path of its own.

constexpr uint32_t k_len = 32 * 4096;
constexpr int k_victim = 10; // the 10th data packet: later ones on other paths get through

struct outcome {
    uint64_t retransmits = 0;
    uint64_t timeouts = 0;
    uint64_t tail_probes = 0;
    uint64_t rack_losses = 0;
    uint64_t spurious = 0;
    uint64_t duplicates = 0;
    uint64_t resent_after_ns = 0; // from the victim's first send to its resend
};

// Runs one WRITE; `act` is applied to the k_victim-th data packet the first time it is
// sent: return true to drop it, or move its deliver_at to reorder it.
// drop_resend drops the victim's first resend; resend_hold_ns delays it instead.
template <typename Act>
outcome transfer(transport_config t, Act act, bool drop_resend = false, uint64_t resend_hold_ns = 0)
{
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), k_len, k_all_access, 3);
    buffer dst(h.b(), k_len, k_all_access);
    int seen = 0;
    uint8_t path = 0;
    uint32_t psn = 0;
    uint64_t first_at = 0;
    outcome o;
    h.filter = [&](captured& p) {
        if (p.to != 1 || !is_data(p)) {
            return false;
        }
        const auto v = p.view();
        if (++seen == k_victim) {
            path = v.path;
            psn = v.psn;
            first_at = h.now();
            return act(p);
        }
        if (first_at != 0 && v.path == path && v.psn == psn && o.resent_after_ns == 0) {
            o.resent_after_ns = h.now() - first_at;
            p.deliver_at += resend_hold_ns;
            return drop_resend;
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    h.run_until([] { return false; }, 1'000'000); // late copies and ACKs settle
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    const counters& s = h.a().stats();
    o.retransmits = s.retransmits;
    o.timeouts = s.timeouts;
    o.tail_probes = s.tail_probes;
    o.rack_losses = s.rack_losses;
    o.spurious = s.spurious_retx;
    o.duplicates = h.b().stats().rx_duplicates;
    return o;
}

} // namespace

TEST_CASE("RACK: a packet lost on one path is resent once later packets on other paths are acknowledged",
          "[rack]")
{
    pair_harness probe(wide_paths());
    const outcome o = transfer(wide_paths(), [](captured&) { return true; });
    CHECK(o.retransmits == 1);
    CHECK(o.rack_losses == 1);
    CHECK(o.timeouts == 0);
    CHECK(o.tail_probes == 0); // found before the path's tail probe would fire
    CHECK(o.duplicates == 0);
    // Not before a round trip plus the reorder window: the wire's RTT is 2 us.
    CHECK(o.resent_after_ns >= 2 * probe.delay() + 2 * probe.delay() / 4);
}

TEST_CASE("RACK: a path without an RTT sample of its own is judged by its plane's", "[rack]")
{
    // The victim is its path's first packet: that path has no sample, but other paths on
    // its plane have. Judged by its plane, the loss is found a round trip and a window
    // after the send, not after the first-sample wait (initial_rtt, 20 us on a 2 us wire).
    pair_harness probe(wide_paths());
    const outcome o = transfer(wide_paths(), [](captured&) { return true; });
    CHECK(o.rack_losses == 1);
    CHECK(o.resent_after_ns < wide_paths().initial_rtt_ns / 2);
}

TEST_CASE("RACK: a resend moves the path's pending tail probe, so it is not sent twice", "[rack]")
{
    // The tail probe armed at the victim's first send would fire before the answer to
    // RACK's resend (held on the wire) arrives, and send the packet a third time; measured
    // from the resend it fires after. The answer lands between the two deadlines.
    pair_harness probe(wide_paths());
    const transport_config t = wide_paths();
    const uint64_t rack_at = transfer(t, [](captured&) { return true; }).resent_after_ns;
    REQUIRE(rack_at > 0);
    const uint64_t pto = 2 * t.initial_rtt_ns + t.ack_delay_ns; // the path has no sample
    REQUIRE(pto > rack_at / 2 + 2 * probe.delay());
    const uint64_t hold = pto - rack_at / 2 - 2 * probe.delay();
    const outcome o = transfer(t, [](captured&) { return true; }, false, hold);
    CHECK(o.rack_losses == 1);
    CHECK(o.retransmits == 1);
    CHECK(o.tail_probes == 0);
    CHECK(o.timeouts == 0);
    CHECK(o.duplicates == 0);
}

TEST_CASE("A connection whose first packet is lost probes after the handshake's round trip", "[rack]")
{
    // The blind first round trip carries one packet (conn_cwnd_first): if it is lost
    // nothing else can reveal it, and the tail probe is all there is. Before any RTT
    // sample it assumes the handshake's round trip (2 us here), not initial_rtt (20 us).
    pair_harness h(wide_paths());
    const conn_id c = h.connect();
    buffer src(h.a(), k_len, k_all_access, 3);
    buffer dst(h.b(), k_len, k_all_access);
    uint64_t first_at = 0;
    uint64_t resent_at = 0;
    h.filter = [&](captured& p) {
        if (p.to != 1 || !is_data(p)) {
            return false;
        }
        if (first_at == 0) {
            first_at = h.now();
            return true;
        }
        if (resent_at == 0) {
            resent_at = h.now();
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().tail_probes == 1);
    CHECK(h.a().stats().timeouts == 0);
    REQUIRE(resent_at > first_at);
    CHECK(resent_at - first_at < 2 * wide_paths().initial_rtt_ns);
}

TEST_CASE("A lost tail probe is probed once more before the RTO, where loss is chance", "[rack]")
{
    // The first packet and the probe's resend of it are both lost. Too little has been
    // sent to tell chance from a broken route, and the connection has other paths, so
    // the first timeout would not be held against the route (spec 5.6): the resend gets
    // a probe of its own, and only a third loss in a row waits for the RTO.
    pair_harness h(wide_paths());
    const conn_id c = h.connect();
    buffer src(h.a(), k_len, k_all_access, 3);
    buffer dst(h.b(), k_len, k_all_access);
    int sends = 0;
    h.filter = [&](captured& p) {
        if (p.to != 1 || !is_data(p)) {
            return false;
        }
        return ++sends <= 2; // the blind first packet, then the probe's resend of it
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().tail_probes == 2);
    CHECK(h.a().stats().timeouts == 0);
}

TEST_CASE("RACK off: the same loss waits for the tail probe", "[rack]")
{
    transport_config t = wide_paths();
    t.rack = false;
    const outcome o = transfer(t, [](captured&) { return true; });
    CHECK(o.retransmits == 1);
    CHECK(o.rack_losses == 0);
    CHECK(o.tail_probes + o.timeouts >= 1);
}

TEST_CASE("RACK: a packet reordered within the window is not resent", "[rack]")
{
    // 400 ns late on a 2 us round trip: inside min_rtt / 4 (the ACK may also wait for the
    // receiver's delayed-ACK allowance, which the window adds for packets not asking).
    const outcome o = transfer(wide_paths(), [](captured& p) {
        p.deliver_at += 400;
        return false;
    });
    CHECK(o.retransmits == 0);
    CHECK(o.rack_losses == 0);
    CHECK(o.duplicates == 0);
}

TEST_CASE("RACK: a packet reordered beyond the window is resent, and the resend is found spurious",
          "[rack]")
{
    // When RACK resends a lost packet on this wire; the original is held back to arrive
    // just after that resend left, and the resend is lost, so the ACK that settles the
    // packet names the original.
    const uint64_t resend = transfer(wide_paths(), [](captured&) { return true; }).resent_after_ns;
    REQUIRE(resend > 0);
    const outcome o = transfer(
        wide_paths(),
        [&](captured& p) {
            p.deliver_at += resend + 300 - 1000;
            return false;
        },
        true);
    CHECK(o.rack_losses == 1);
    CHECK(o.retransmits == 1);
    CHECK(o.timeouts == 0);
    CHECK(o.spurious == 1); // the ACK names a packet sent before the resend
    CHECK(o.duplicates == 0);
}

TEST_CASE("RACK: reorder_steps_max is validated", "[rack]")
{
    endpoint_config c;
    c.transport.reorder_steps_max = 0;
    CHECK(validate(c).find("reorder_steps_max") != std::string::npos);
    c.transport.reorder_steps_max = 4;
    CHECK(validate(c).empty());
}
