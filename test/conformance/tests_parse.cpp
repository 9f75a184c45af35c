// Parse rules and connection-level acceptance: a packet that breaks them is ignored
// before it touches any state. Each test sends the broken packet, checks nothing came
// back and nothing was written, then sends the well-formed packet under the same PSN
// and checks it is accepted as fresh (so the broken one was not recorded).
#include <functional>

#include "helpers.hpp"

namespace metaroce::conformance {

namespace {

using mangler = std::function<std::vector<uint8_t>(std::vector<uint8_t>)>;

struct reject_case {
    mangler mangle;
    std::string counter;        // where the target exposes counters
    uint32_t src_addr = k_tester_addr;
};

void rejected_then_accepted(ctx& x, const reject_case& rc)
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> data = pattern(64, 0x31);
    const sent_msg s = write_msg(x.p, c, r, 128, data);
    const uint32_t psn = s.pkts[0].psn;
    const auto m = x.mark(rc.counter);
    tx_opts o;
    o.src_addr = rc.src_addr;
    o.udp_sport = c.sport(0);
    x.p.send(rc.mangle(s.pkts[0].bytes), o);
    const uint32_t other = rc.src_addr;
    const auto answered = x.p.collect(
        [&](const rx_pkt& p) {
            return (p.is(wire::opcode::ack) || p.is(wire::opcode::nak)) &&
                   (p.v().dst_conn == c.id || p.d->dst_addr == other);
        },
        x.p.quiet_ns());
    x.check(answered.empty(), "the packet was answered (" + describe(answered) + "), it must be ignored");
    x.check(all_zero(x.mem(r, 0, 512)), "bytes of the rejected packet were written");
    x.check_counted(m);
    x.p.send_pkt(c, s.pkts[0]);
    const rx_pkt a = expect_ack(x, c, 0, psn + 1, "for the well-formed packet under the same PSN");
    x.check(a.v().ack->rx_pkts.host() == 1,
            "the well-formed packet was not counted as received (rx_pkts " +
                std::to_string(a.v().ack->rx_pkts.host()) + "): the rejected one took its PSN");
    x.check(x.mem(r, 128, data.size()) == data, "the well-formed packet's bytes did not land");
}

std::vector<uint8_t> with_byte(std::vector<uint8_t> b, size_t off, uint8_t v)
{
    b[off] = v;
    return b;
}

} // namespace

CONFORMANCE_TEST(parse_shorter_than_bth, "3.11")
{
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) {
                                   b.resize(19);
                                   return b;
                               },
                               "rx_malformed.too_short"});
}

CONFORMANCE_TEST(parse_bad_version, "3.11", "3.1")
{
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) { return with_byte(b, at::version, 2); },
                               "rx_malformed.bad_version"});
}

CONFORMANCE_TEST(parse_reserved_opcode, "3.11", "3.0")
{
    for (uint8_t op : {uint8_t(0x00), uint8_t(0x07), uint8_t(0x12), uint8_t(0x27), uint8_t(0xff)}) {
        rejected_then_accepted(x, {[op](std::vector<uint8_t> b) { return with_byte(b, at::opcode, op); },
                                   "rx_malformed.unknown_opcode"});
        x.p.close_all();
    }
}

CONFORMANCE_TEST(parse_reserved_flags, "3.11", "3.1")
{
    for (uint16_t bit : {uint16_t(1u << 6), uint16_t(1u << 15)}) {
        rejected_then_accepted(x, {[bit](std::vector<uint8_t> b) {
                                       poke16(b, at::flags, uint16_t((b[2] << 8 | b[3]) | bit));
                                       return b;
                                   },
                                   "rx_malformed.unknown_flags"});
        x.p.close_all();
    }
}

CONFORMANCE_TEST(parse_shorter_than_fixed_headers, "3.11", "3.5")
{
    // A WRITE needs 60 header bytes; 50 is more than the BTH and less than BTH+MSG+RETH.
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) {
                                   b.resize(50);
                                   return b;
                               },
                               "rx_malformed.too_short"});
}

CONFORMANCE_TEST(parse_payload_overrun, "3.11", "3.2")
{
    // 64 payload bytes at offset 0 of a message said to be 32 long.
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) {
                                   poke32(b, at::msg_len, 32);
                                   return b;
                               },
                               "rx_malformed.payload_overrun"});
}

CONFORMANCE_TEST(parse_empty_payload, "3.11")
{
    // The headers of a 64-byte WRITE with no payload.
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) {
                                   b.resize(wire::data_header_len(wire::opcode::write));
                                   return b;
                               },
                               "rx_malformed.empty_payload"});
}

// The exception of the empty-payload rule: a whole empty message is one empty packet.
CONFORMANCE_TEST(parse_empty_message_accepted, "3.11", "4.3")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(256);
    const sent_msg s = write_msg(x.p, c, r, 0, {});
    x.check(s.pkts[0].bytes.size() == wire::data_header_len(wire::opcode::write), "tester built a wrong packet");
    x.p.send_pkt(c, s.pkts[0]);
    const rx_pkt a = expect_ack(x, c, 0, s.pkts[0].psn + 1, "for an empty WRITE");
    x.check(a.v().ack->rx_pkts.host() == 1, "the empty message was not counted as received");
}

CONFORMANCE_TEST(parse_trailing_bytes, "3.11", "3.0")
{
    // A READ_REQ carries no payload: four bytes after its headers make it malformed, so
    // no READ_RESP and no ACK may come back; the clean READ_REQ then gets both.
    tconn& c = x.p.connect();
    const region r = x.rw_mr(256);
    x.fill(r, 0, pattern(256, 9));
    msg_spec m;
    m.op = wire::opcode::read_req;
    m.va = r.va;
    m.rkey = r.rkey;
    m.read_len = 100;
    m.path = 0;
    const sent_msg s = x.p.build_message(c, m);
    const auto mark = x.mark("rx_malformed.trailing_bytes");
    std::vector<uint8_t> bad = s.pkts[0].bytes;
    bad.insert(bad.end(), {1, 2, 3, 4});
    x.p.send_on(c, bad, 0);
    const auto got = x.p.collect([&](const rx_pkt& p) { return p.ok() && p.v().dst_conn == c.id; },
                                 x.p.quiet_ns());
    x.check(got.empty(), "a READ_REQ with trailing bytes was answered (" + describe(got) + ")");
    x.check_counted(mark);
    x.p.send_pkt(c, s.pkts[0]);
    x.p.must(tester::data_for(c, m.stream), x.p.reply_ns(), "READ_RESP for the clean READ_REQ");
}

// ---- connection-level acceptance (spec 3.12) ---------------------------------------

CONFORMANCE_TEST(accept_unknown_connection_ignored, "3.12")
{
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) {
                                   poke32(b, at::dst_conn, ((b[4] << 24 | b[5] << 16 | b[6] << 8 | b[7]) ^ 0x5a5a0000u));
                                   return b;
                               },
                               "rx_unknown_conn"});
}

CONFORMANCE_TEST(accept_wrong_peer_ignored, "3.12", "1.1")
{
    rejected_then_accepted(x, {[](std::vector<uint8_t> b) { return b; }, "rx_wrong_peer", k_other_addr});
}

CONFORMANCE_TEST(accept_bad_path_ignored, "3.12")
{
    // The tester offers 4 paths, so path 4 (and 255) names no path.
    for (uint8_t path : {uint8_t(4), uint8_t(255)}) {
        rejected_then_accepted(x, {[path](std::vector<uint8_t> b) { return with_byte(b, at::path, path); },
                                   "rx_bad_path"});
        x.p.close_all();
    }
}

CONFORMANCE_TEST(accept_payload_over_mtu_ignored, "3.12", "2.6", "3.5")
{
    offer o;
    o.mtu = 256;
    tconn& c = x.p.connect(o);
    x.check(c.mtu == 256, "the IUT did not agree to mtu 256 (agreed " + std::to_string(c.mtu) + ")");
    const region r = x.rw_mr(4096);
    // One packet of 257 bytes: well-formed, but over the agreed mtu.
    const uint32_t psn = c.next_psn[0];
    wire::bth_fields b{wire::opcode::write, wire::bth_flag::last | wire::bth_flag::ack_req, c.iut_id, psn, 0, 0,
                       x.p.now32()};
    wire::msg_fields f;
    f.stream = 2;
    f.msg_len = 257;
    f.va = r.va;
    f.rkey = r.rkey;
    const std::vector<uint8_t> payload = pattern(257, 3);
    const auto m = x.mark("rx_invalid");
    x.p.send_on(c, x.p.data_pkt(b, f, payload), 0);
    const auto answered = x.p.collect(tester::reply_for(c), x.p.quiet_ns());
    x.check(answered.empty(), "an over-mtu packet was answered (" + describe(answered) + ")");
    x.check(all_zero(x.mem(r, 0, 512)), "bytes of the over-mtu packet were written");
    x.check_counted(m);
    const std::vector<uint8_t> data = pattern(200, 5);
    const sent_msg good = write_msg(x.p, c, r, 1024, data);
    x.p.send_pkt(c, good.pkts[0]);
    x.check(good.pkts[0].psn == psn, "tester numbering");
    const rx_pkt a = expect_ack(x, c, 0, good.pkts[0].psn + 1, "for a packet within the mtu");
    x.check(a.v().ack->rx_pkts.host() == 1, "the over-mtu packet took the PSN");
    x.check(x.mem(r, 1024, data.size()) == data, "the good packet's bytes did not land");
}

} // namespace metaroce::conformance
