// The IUT's receive side of a path: its window, what it records, and the ACKs it
// generates (spec 2.3, 2.4, 3.6, 5.1, 5.2, 5.4, 5.7, 6.4).
#include "helpers.hpp"

namespace metaroce::conformance {

namespace {

// A WRITE of `n` packets, all on path 0, into region r at offset 0.
sent_msg path0_write(tester& p, tconn& c, const region& r, size_t bytes, uint8_t seed)
{
    msg_spec m;
    m.op = wire::opcode::write;
    m.va = r.va;
    m.rkey = r.rkey;
    m.payload = pattern(bytes, seed);
    m.path = 0;
    return p.build_message(c, m);
}

bool no_sack(const rx_pkt& a)
{
    for (uint32_t i = 0; i < wire::k_sack_bits; ++i) {
        if (a.sack_bit(i)) {
            return false;
        }
    }
    return true;
}

} // namespace

CONFORMANCE_TEST(ack_req_acknowledged_at_once, "5.4", "3.6", "6.4")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const sent_msg s = write_msg(x.p, c, r, 0, pattern(64, 1), 1);
    const uint32_t ts = uint32_t(s.pkts[0].bytes[16] << 24 | s.pkts[0].bytes[17] << 16 |
                                 s.pkts[0].bytes[18] << 8 | s.pkts[0].bytes[19]);
    const uint64_t t0 = x.t.now_ns();
    x.p.send_pkt(c, s.pkts[0]);
    const rx_pkt a = expect_ack(x, c, 1, s.pkts[0].psn + 1, "for a packet with ACK_REQ");
    if (x.exact()) {
        x.check(a.d->at_ns == t0, "the ACK for an ACK_REQ packet came " + std::to_string(a.d->at_ns - t0) +
                                      " ns later, not at once");
    }
    const wire::ack_header& h = *a.v().ack;
    x.check(h.ts_echo.host() == ts, "ts_echo is not the data packet's tx_ts");
    x.check(h.rx_pkts.host() == 1 && h.ce_pkts.host() == 0, "rx_pkts/ce_pkts are not 1/0");
    x.check(no_sack(a), "SACK bits set with nothing out of order");
    x.check(h.rate_hint_mbps.host() == 0, "a rate hint with a single sending connection (must be 0)");
}

CONFORMANCE_TEST(ack_within_ack_delay, "5.4")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const sent_msg s = path0_write(x.p, c, r, 2048, 2);
    const uint64_t t0 = x.t.now_ns();
    x.p.send_pkt(c, s.pkts[0]); // in order, no ACK_REQ, no CE, 1 KiB
    const rx_pkt a = expect_ack(x, c, 0, s.pkts[0].psn + 1, "for a packet without ACK_REQ");
    if (x.exact()) {
        x.check(a.d->at_ns - t0 <= 4'000, "the ACK came after " + std::to_string(a.d->at_ns - t0) +
                                               " ns, more than ack_delay (4 us)");
    }
}

CONFORMANCE_TEST(out_of_order_acked_at_once_with_sack, "5.4", "5.2", "3.6")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const sent_msg s = path0_write(x.p, c, r, 3000, 3);
    const uint32_t p0 = s.pkts[0].psn;
    uint64_t t0 = x.t.now_ns();
    x.p.send_pkt(c, s.pkts[1]); // no ACK_REQ, but out of order
    rx_pkt a = expect_ack(x, c, 0, p0, "for an out-of-order packet");
    if (x.exact()) {
        x.check(a.d->at_ns == t0, "the ACK for an out-of-order packet was delayed");
    }
    x.check(a.sack_bit(1) && !a.sack_bit(2), "SACK does not show exactly PSN cum+1");
    x.p.send_pkt(c, s.pkts[2]);
    a = expect_ack(x, c, 0, p0, "for the last packet");
    x.check(a.sack_bit(1) && a.sack_bit(2) && !a.sack_bit(3), "SACK does not show PSNs cum+1 and cum+2");
    t0 = x.t.now_ns();
    x.p.send_pkt(c, s.pkts[0]);
    a = expect_ack(x, c, 0, p0 + 3, "once the hole is filled");
    x.check(no_sack(a), "SACK bits left after the window advanced");
    x.check(x.mem(r, 0, 3000) == pattern(3000, 3), "the message did not land whole");
}

CONFORMANCE_TEST(sack_bit_order, "3.6")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const uint32_t base = c.next_psn[0];
    for (uint32_t gap : {9u, 17u}) {
        c.next_psn[0] = base + gap;
        const sent_msg s = write_msg(x.p, c, r, gap * 64, pattern(64, uint8_t(gap)));
        x.p.send_pkt(c, s.pkts[0]);
    }
    rx_pkt a = x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK");
    while (!a.sack_bit(17)) {
        a = x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK showing both PSNs");
    }
    x.check(a.v().psn == base, "cumulative ack moved over a hole");
    x.check(a.v().ack->sack[1] == 0x02 && a.v().ack->sack[2] == 0x02 && a.v().ack->sack[0] == 0,
            "SACK bytes " + hex(std::span<const uint8_t>(a.v().ack->sack, 4)) +
                ": PSN cum+9 must be bit 1 of byte 1 and cum+17 bit 1 of byte 2 (LSB first)");
}

CONFORMANCE_TEST(ce_acknowledged_at_once_and_counted, "2.4", "5.4", "3.6")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const sent_msg s = path0_write(x.p, c, r, 2048, 4);
    const auto mark = x.mark("rx_ce");
    const uint64_t t0 = x.t.now_ns();
    x.p.send_pkt(c, s.pkts[0], true);
    rx_pkt a = expect_ack(x, c, 0, s.pkts[0].psn + 1, "for a CE-marked packet");
    if (x.exact()) {
        x.check(a.d->at_ns == t0, "the ACK for a CE-marked packet was delayed");
    }
    x.check(a.v().ack->rx_pkts.host() == 1 && a.v().ack->ce_pkts.host() == 1,
            "rx_pkts/ce_pkts " + std::to_string(a.v().ack->rx_pkts.host()) + "/" +
                std::to_string(a.v().ack->ce_pkts.host()) + ", expected 1/1");
    x.check_counted(mark);
    x.p.send_pkt(c, s.pkts[1]);
    a = expect_ack(x, c, 0, s.pkts[1].psn + 1, "for the next, unmarked packet");
    x.check(a.v().ack->ce_pkts.host() == 0, "ce_pkts counts marks from before the previous ACK");
}

CONFORMANCE_TEST(ack_every_bytes_and_coalescing, "5.4", "3.6")
{
    // ack_every_bytes (default 32 KiB) is 32 packets of 1 KiB; 4 more follow.
    constexpr size_t k_every = 32;
    constexpr size_t k_total = k_every + 4;
    tconn& c = x.p.connect();
    const region r = x.rw_mr(k_total * 1024);
    const sent_msg s = path0_write(x.p, c, r, k_total * 1024, 5);
    x.check(c.mtu == 1024 && s.pkts.size() == k_total, "needs mtu 1024");
    uint32_t acked_rx = 0;
    const auto count = [&](const std::vector<rx_pkt>& acks) {
        for (const rx_pkt& a : acks) {
            acked_rx += a.v().ack->rx_pkts.host();
        }
        return acks.size();
    };
    // A receiver that splits its capacity answers a newcomer's first packet at once, with
    // its share (spec 6.4); coalescing counts from there.
    x.p.send_pkt(c, s.pkts[0]);
    const auto joined = x.p.collect(tester::ack_for(c, 0), 0);
    size_t first = 0;
    if (x.exact() && !joined.empty()) {
        x.check(joined.size() == 1 && joined[0].v().ack->rx_pkts.host() == 1 &&
                    joined[0].v().psn == s.pkts[0].psn + 1,
                "the newcomer's ACK does not cover exactly its first packet");
        first = 1;
    }
    count(joined);
    for (size_t i = 1; i < first + k_every - 1; ++i) {
        x.p.send_pkt(c, s.pkts[i]);
    }
    // On a virtual clock no time passed: below 32 KiB nothing may be acknowledged yet.
    const auto early = x.p.collect(tester::ack_for(c, 0), 0);
    if (x.exact()) {
        x.check(early.empty(), "an ACK before 32 KiB, without ACK_REQ or delay");
    }
    count(early);
    const size_t last = first + k_every - 1;
    x.p.send_pkt(c, s.pkts[last]);
    if (x.exact()) {
        const auto now = x.p.collect(tester::ack_for(c, 0), 0);
        x.check(now.size() == 1, "no ACK at once after 32 KiB (ack_every_bytes)");
        x.check(now.size() == 1 && now[0].v().ack->rx_pkts.host() == k_every && now[0].v().psn == s.pkts[last].psn + 1,
                "the 32 KiB ACK does not cover the 32 packets (coalescing)");
        count(now);
    }
    for (size_t i = last + 1; i < k_total; ++i) {
        x.p.send_pkt(c, s.pkts[i]);
    }
    for (;;) {
        const rx_pkt a = x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACKs covering all the packets");
        count({a});
        if (a.v().psn == s.pkts[k_total - 1].psn + 1) {
            break;
        }
    }
    x.check(acked_rx == k_total, "the ACKs' rx_pkts add up to " + std::to_string(acked_rx) + ", not " +
                                     std::to_string(k_total));
}

CONFORMANCE_TEST(duplicate_dropped_and_acked_at_once, "5.2")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> a = pattern(64, 6);
    const sent_msg s = write_msg(x.p, c, r, 0, a);
    x.p.send_pkt(c, s.pkts[0]);
    expect_ack(x, c, 0, s.pkts[0].psn + 1, "for the WRITE");
    // The same PSN again, carrying other bytes of another message.
    msg_spec m;
    m.op = wire::opcode::write;
    m.va = r.va + 256;
    m.rkey = r.rkey;
    m.payload = pattern(64, 7);
    m.path = 0;
    c.next_psn[0] = s.pkts[0].psn;
    const sent_msg dup = x.p.build_message(c, m);
    const auto mark = x.mark("rx_duplicates");
    const uint64_t t0 = x.t.now_ns();
    x.p.send_pkt(c, dup.pkts[0]);
    const rx_pkt k = expect_ack(x, c, 0, s.pkts[0].psn + 1, "for a duplicate PSN");
    if (x.exact()) {
        x.check(k.d->at_ns == t0, "the ACK for a duplicate was delayed");
    }
    x.check(all_zero(x.mem(r, 256, 64)), "a duplicate PSN's payload was placed");
    x.check(x.mem(r, 0, 64) == a, "the original bytes changed");
    x.check_counted(mark);
}

CONFORMANCE_TEST(beyond_window_dropped_and_acked, "5.2", "3.6")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const uint32_t e = c.next_psn[0];
    c.next_psn[0] = e + 256;
    const sent_msg far = write_msg(x.p, c, r, 0, pattern(64, 8));
    const auto mark = x.mark("rx_beyond_window");
    x.p.send_pkt(c, far.pkts[0]);
    rx_pkt a = expect_ack(x, c, 0, e, "for a PSN 256 beyond the cumulative point");
    x.check(no_sack(a), "a PSN beyond the window was recorded");
    x.check(all_zero(x.mem(r, 0, 64)), "a packet beyond the window was placed");
    x.check_counted(mark);
    // 255 beyond is inside the window: recorded, bit 255.
    c.next_psn[0] = e + 255;
    c.next_msn = far.msn;
    c.next_ssn[2] = far.ssn;
    const sent_msg in = write_msg(x.p, c, r, 0, pattern(64, 9));
    x.p.send_pkt(c, in.pkts[0]);
    a = expect_ack(x, c, 0, e, "for a PSN 255 beyond the cumulative point");
    x.check(a.sack_bit(255), "PSN cum+255 not shown in the SACK's last bit");
    x.check(x.mem(r, 0, 64) == pattern(64, 9), "a packet at the window's edge was not placed");
}

CONFORMANCE_TEST(psn_wraps_around, "5.1", "5.2")
{
    offer o;
    o.isn = 0xfffffff0u;
    tconn& c = x.p.connect(o);
    const region r = x.rw_mr(4096);
    sent_msg last;
    for (uint32_t i = 0; i < 32; ++i) {
        last = write_msg(x.p, c, r, i * 16, pattern(16, uint8_t(i)));
        x.p.send_pkt(c, last.pkts[0]);
    }
    x.check(last.pkts[0].psn == 0x0000000fu, "tester numbering");
    for (;;) {
        const rx_pkt a = x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK past the PSN wrap");
        if (a.v().psn == 0x10u) {
            break;
        }
        x.check(a.v().psn - 0xfffffff0u <= 32, "cumulative ack " + std::to_string(a.v().psn) +
                                                     " outside the range sent across the wrap");
    }
    for (uint32_t i = 0; i < 32; ++i) {
        x.check(x.mem(r, i * 16, 16) == pattern(16, uint8_t(i)), "a write across the PSN wrap did not land");
    }
}

CONFORMANCE_TEST(udp_source_port_does_not_identify, "2.3")
{
    // One message, its packets on one path from three different UDP source ports:
    // the receiver must take them all as the same connection and path.
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const sent_msg s = path0_write(x.p, c, r, 3000, 10);
    const uint16_t ports[] = {49152, 57005, 65535};
    for (size_t i = 0; i < s.pkts.size(); ++i) {
        x.p.send(s.pkts[i].bytes, {c.addr, 0, ports[i], false});
    }
    for (;;) {
        const rx_pkt a = x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK covering the three packets");
        if (a.v().psn == s.pkts[2].psn + 1) {
            break;
        }
    }
    x.check(x.mem(r, 0, 3000) == pattern(3000, 10), "packets from other source ports were not placed");
}

CONFORMANCE_TEST(ack_follows_the_latest_data_route, "5.7", "7.6")
{
    offer o;
    o.planes = x.t.caps().planes;
    tconn& c = x.p.connect(o);
    const region r = x.rw_mr(4096);
    const uint8_t plane = c.planes > 1 ? 1 : 0;
    struct route {
        uint8_t plane;
        uint16_t sport;
    };
    for (const route& rt : {route{0, 50001}, route{plane, 61234}, route{0, 49999}}) {
        const sent_msg s = write_msg(x.p, c, r, 0, pattern(32, 11), 1);
        x.p.send(s.pkts[0].bytes, {c.addr, rt.plane, rt.sport, false});
        const rx_pkt a = expect_ack(x, c, 1, s.pkts[0].psn + 1, "for the WRITE");
        x.check(a.d->udp_sport == rt.sport, "the ACK went out from UDP port " + std::to_string(a.d->udp_sport) +
                                                ", not the data's " + std::to_string(rt.sport));
        x.check(a.d->plane == rt.plane, "the ACK went out on plane " + std::to_string(a.d->plane) +
                                            ", not the data's " + std::to_string(rt.plane));
    }
}

CONFORMANCE_TEST(rate_hint_shared_between_senders, "6.4")
{
    if (!x.t.caps().rate_hints) {
        x.na("the target has no inbound capacity configured (hints are always 0)");
    }
    tconn& a = x.p.connect();
    tconn& b = x.p.connect();
    const region r = x.rw_mr(4096);
    const auto hint_of = [](const rx_pkt& k) { return k.v().ack->rate_hint_mbps.host(); };
    // Alone, a sender gets no hint; once a second one sends, both get a share.
    const sent_msg m1 = write_msg(x.p, a, r, 0, pattern(64, 12));
    x.p.send_pkt(a, m1.pkts[0]);
    x.check(hint_of(expect_ack(x, a, 0, m1.pkts[0].psn + 1, "for the only sender")) == 0,
            "a rate hint while a single connection sends");
    const sent_msg m2 = write_msg(x.p, b, r, 1024, pattern(64, 13));
    x.p.send_pkt(b, m2.pkts[0]);
    const uint32_t newcomer = hint_of(expect_ack(x, b, 0, m2.pkts[0].psn + 1, "for the second sender"));
    x.check(newcomer != 0, "no rate hint for a second connection sending");
    if (x.exact()) {
        // The core target's driver set C = 100 Gb/s and u = 0.95: an equal share is 47500.
        x.check(newcomer >= 47'000 && newcomer <= 47'500,
                "the newcomer's hint is " + std::to_string(newcomer) + " Mb/s, not an equal share of u*C (47500)");
    }
    // After a whole epoch in which both sent, the shares fit in u*C together.
    x.p.idle(x.exact() ? 25'000 : x.p.quiet_ns() / 4);
    uint64_t sum = 0;
    for (tconn* c : {&a, &b}) {
        const sent_msg m = write_msg(x.p, *c, r, 2048, pattern(64, 14));
        x.p.send_pkt(*c, m.pkts[0]);
        const uint32_t h = hint_of(expect_ack(x, *c, 0, m.pkts[0].psn + 1, "in the next epoch"));
        x.check(h != 0, "no rate hint in the next epoch with two connections sending");
        sum += h;
    }
    x.check(sum <= 95'000, "the shares add up to " + std::to_string(sum) + " Mb/s, more than u*C");
}

} // namespace metaroce::conformance
