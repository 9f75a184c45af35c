// The IUT as responder: message-wide checks and NAKs, direct placement, commit in
// stream order, receives and READ responses (spec 4, 7.5, 8).
#include "helpers.hpp"
#include "metaroce/seq.hpp"

namespace metaroce::conformance {

namespace {


// Waits until every packet of `s` is covered by an ACK (cumulative or SACK).
void wait_acked(ctx& x, const tconn& c, const sent_msg& s)
{
    std::vector<bool> done(s.pkts.size(), false);
    const auto all = [&] { return std::all_of(done.begin(), done.end(), [](bool b) { return b; }); };
    while (!all()) {
        const rx_pkt a = x.p.must(tester::ack_for(c), x.p.reply_ns(), "ACK for every packet of the message");
        for (size_t i = 0; i < s.pkts.size(); ++i) {
            const out_pkt& k = s.pkts[i];
            if (k.path != a.v().path) {
                continue;
            }
            const uint32_t cum = a.v().psn;
            done[i] = done[i] || seq_gt(cum, k.psn) ||
                      (seq_ge(k.psn, cum) && k.psn - cum < wire::k_sack_bits && a.sack_bit(k.psn - cum));
        }
    }
}

msg_spec spec_of(wire::opcode op, const region& r, uint64_t off, std::vector<uint8_t> data, int path = -1)
{
    msg_spec m;
    m.op = op;
    m.va = r.va + off;
    m.rkey = r.rkey;
    m.payload = std::move(data);
    m.path = path;
    return m;
}

} // namespace

CONFORMANCE_TEST(write_lands_at_remote_address, "3.3", "3.5", "8.3", "9.1")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(8192);
    const std::vector<uint8_t> data = pattern(2600, 1); // 3 packets at mtu 1024
    const sent_msg s = x.p.send_message(c, spec_of(wire::opcode::write, r, 100, data));
    wait_acked(x, c, s);
    x.check(x.mem(r, 100, data.size()) == data, "the WRITE's bytes are not at va + offset");
    x.check(all_zero(x.mem(r, 0, 100)) && all_zero(x.mem(r, 2700, 1000)), "bytes outside the WRITE changed");
}

CONFORMANCE_TEST(write_placed_on_arrival_out_of_order, "1.4", "8.3", "8.4")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> data = pattern(2600, 2);
    const sent_msg s = x.p.build_message(c, spec_of(wire::opcode::write, r, 0, data));
    const auto got = [&](size_t from, size_t to) {
        return x.mem(r, from, to - from) == std::vector<uint8_t>(data.begin() + long(from), data.begin() + long(to));
    };
    const size_t tail = data.size() - 8;
    const auto send_and_ack = [&](const out_pkt& k) {
        x.p.send_pkt(c, k);
        x.p.must(
            [&](const rx_pkt& a) {
                return tester::ack_for(c, k.path)(a) && (a.v().psn == k.psn + 1 || a.sack_bit(k.psn - a.v().psn));
            },
            x.p.reply_ns(), "ACK for packet at offset " + std::to_string(k.psn));
    };
    send_and_ack(s.pkts[2]);
    x.check(got(2048, tail), "the last packet's bytes were not placed on arrival");
    x.check(all_zero(x.mem(r, tail, 8)), "the message's last 8 bytes became visible before the message was complete");
    x.check(all_zero(x.mem(r, 0, 2048)), "bytes of packets not yet received changed");
    send_and_ack(s.pkts[1]);
    x.check(got(1024, 2048), "the middle packet's bytes were not placed on arrival");
    x.check(all_zero(x.mem(r, tail, 8)), "the last 8 bytes became visible before the first packet arrived");
    send_and_ack(s.pkts[0]);
    x.check(got(0, data.size()), "the complete message is not all in memory");
}

CONFORMANCE_TEST(write_tail_waits_for_earlier_messages, "8.3", "8.4")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> a = pattern(1500, 3); // two packets
    const std::vector<uint8_t> b = pattern(16, 4);
    const sent_msg ma = x.p.build_message(c, spec_of(wire::opcode::write, r, 0, a, 0));
    const sent_msg mb = x.p.build_message(c, spec_of(wire::opcode::write, r, 2048, b, 1));
    x.p.send_pkt(c, ma.pkts[1]);
    x.p.send_pkt(c, mb.pkts[0]);
    x.p.must(tester::ack_for(c, 1), x.p.reply_ns(), "ACK for the later message");
    x.check(x.mem(r, 2048, 8) == std::vector<uint8_t>(b.begin(), b.begin() + 8),
            "the later message's first bytes were not placed on arrival");
    x.check(all_zero(x.mem(r, 2056, 8)),
            "the later message's last 8 bytes are visible although an earlier message of the stream is incomplete");
    x.p.send_pkt(c, ma.pkts[0]);
    wait_acked(x, c, ma);
    x.check(x.mem(r, 0, a.size()) == a, "the earlier message is not complete in memory");
    x.check(x.mem(r, 2048, b.size()) == b, "the later message's last bytes were not written at commit");
}

CONFORMANCE_TEST(send_lands_in_posted_receives, "3.4", "8.3", "8.4", "9.2")
{
    tconn& c = x.p.connect();
    const region buf = x.mr(1024, access::local_write);
    x.post_recv(c, 2, buf, 0, 256, 11);
    x.post_recv(c, 2, buf, 256, 256, 12);
    const std::vector<uint8_t> d1 = pattern(100, 5), d2 = pattern(50, 6);
    msg_spec m;
    m.op = wire::opcode::send;
    m.payload = d1;
    x.p.send_message(c, m);
    m.op = wire::opcode::send_imm;
    m.payload = d2;
    m.imm = 0xdeadbeef;
    x.p.send_message(c, m);
    const completion w1 = x.wait_wc(11, x.p.reply_ns());
    const completion w2 = x.wait_wc(12, x.p.reply_ns());
    x.check(w1.status == wc_status::success && w1.op == wc_opcode::recv && w1.byte_len == 100 && !w1.has_imm,
            "the SEND's receive completion is wrong (status " + std::string(to_string(w1.status)) +
                ", byte_len " + std::to_string(w1.byte_len) + ")");
    x.check(w2.status == wc_status::success && w2.op == wc_opcode::recv && w2.byte_len == 50 && w2.has_imm &&
                w2.imm == 0xdeadbeef,
            "the SEND_IMM's receive completion is wrong (byte_len " + std::to_string(w2.byte_len) +
                ", imm " + std::to_string(w2.imm) + ")");
    x.check(x.find_wc(11) < x.find_wc(12), "receive completions out of order");
    x.check(x.mem(buf, 0, 100) == d1 && x.mem(buf, 256, 50) == d2, "SEND payloads not in the receive buffers");
}

CONFORMANCE_TEST(recv_seq_names_the_receive, "4.1", "8.4")
{
    tconn& c = x.p.connect();
    const region buf = x.mr(1024, access::local_write);
    x.post_recv(c, 2, buf, 0, 256, 21);
    x.post_recv(c, 2, buf, 256, 256, 22);
    const std::vector<uint8_t> d1 = pattern(80, 7), d2 = pattern(90, 8);
    msg_spec m;
    m.op = wire::opcode::send;
    m.payload = d1;
    const sent_msg first = x.p.build_message(c, m);
    m.payload = d2;
    const sent_msg second = x.p.build_message(c, m);
    x.p.send_pkt(c, second.pkts[0]);
    x.p.must(tester::ack_for(c, second.pkts[0].path), x.p.reply_ns(), "ACK for the second SEND");
    x.check(x.mem(buf, 256, 90) == d2, "the second SEND (recv_seq 1) did not land in the second receive");
    x.check(!x.completed(22), "a receive completed before the earlier message of its stream");
    x.p.send_pkt(c, first.pkts[0]);
    x.wait_wc(22, x.p.reply_ns());
    x.check(x.find_wc(21) != nullptr && x.find_wc(21) < x.find_wc(22), "receives not completed in ssn order");
    x.check(x.mem(buf, 0, 80) == d1, "the first SEND did not land in the first receive");
}

CONFORMANCE_TEST(write_imm_consumes_a_receive, "3.4", "8.4", "9.2")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const region buf = x.mr(256, access::local_write);
    x.post_recv(c, 2, buf, 0, 64, 31);
    const std::vector<uint8_t> data = pattern(300, 9);
    msg_spec m = spec_of(wire::opcode::write_imm, r, 64, data);
    m.imm = 0x01020304;
    x.p.send_message(c, m);
    const completion w = x.wait_wc(31, x.p.reply_ns());
    x.check(w.status == wc_status::success && w.op == wc_opcode::recv_rdma_with_imm && w.has_imm &&
                w.imm == 0x01020304 && w.byte_len == 300,
            "WRITE_IMM's receive completion is wrong (op " + std::to_string(int(w.op)) + ", imm " +
                std::to_string(w.imm) + ", byte_len " + std::to_string(w.byte_len) + ")");
    x.check(x.mem(r, 64, data.size()) == data, "WRITE_IMM bytes not at va");
    x.check(all_zero(x.mem(buf, 0, 64)), "WRITE_IMM wrote into the receive buffer");
}

CONFORMANCE_TEST(read_request_answered, "4.4", "8.4", "3.2", "1.3")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> src = pattern(3000, 10);
    x.fill(r, 0, src);
    msg_spec m;
    m.op = wire::opcode::read_req;
    m.va = r.va + 10;
    m.rkey = r.rkey;
    m.read_len = 2500;
    m.stream = 3;
    m.path = 0;
    const sent_msg s = x.p.send_message(c, m);
    std::vector<bool> got(3, false);
    std::map<uint8_t, uint32_t> last_psn;
    size_t bytes = 0;
    while (bytes < 2500) {
        const rx_pkt p = x.p.must(tester::data_for(c, 3), x.p.reply_ns(), "READ_RESP packets for all 2500 bytes");
        const wire::packet_view& v = p.v();
        x.check(v.op == wire::opcode::read_resp, "answered a READ with " + op_name(p));
        x.check(v.msn == s.msn && v.msg_len == 2500, "READ_RESP does not name the READ (msn/msg_len)");
        x.check(v.path < c.paths, "READ_RESP on a path the connection does not have");
        x.check(v.offset % c.mtu == 0 && v.offset / c.mtu < 3, "READ_RESP offset off the mtu grid");
        const size_t k = v.offset / c.mtu;
        if (got[k]) {
            continue; // a resend
        }
        got[k] = true;
        const size_t want = std::min<size_t>(c.mtu, 2500 - v.offset);
        x.check(v.payload.size() == want, "READ_RESP at offset " + std::to_string(v.offset) + " carries " +
                                              std::to_string(v.payload.size()) + " bytes, not " + std::to_string(want));
        x.check(std::equal(v.payload.begin(), v.payload.end(), src.begin() + 10 + v.offset),
                "READ_RESP bytes differ from the region's");
        x.check(v.is_last() == (v.offset + want == 2500), "LAST flag wrong on a READ_RESP");
        if (auto it = last_psn.find(v.path); it != last_psn.end()) {
            x.check(v.psn == it->second + 1, "READ_RESP PSNs on a path are not consecutive");
        }
        last_psn[v.path] = v.psn;
        bytes += want;
    }
}

CONFORMANCE_TEST(read_response_is_resent_until_acked, "4.4", "5.6", "4.3")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(256);
    x.fill(r, 0, pattern(256, 11));
    x.p.manual_acks(c);
    msg_spec m;
    m.op = wire::opcode::read_req;
    m.va = r.va;
    m.rkey = r.rkey;
    m.read_len = 100;
    m.path = 0;
    x.p.send_message(c, m);
    const rx_pkt first = x.p.must(tester::data_for(c, m.stream), x.p.reply_ns(), "READ_RESP");
    const uint32_t psn = first.v().psn;
    const uint8_t path = first.v().path;
    const rx_pkt again = x.p.must(
        [&](const rx_pkt& p) { return tester::data_for(c, m.stream)(p) && p.v().psn == psn && p.v().path == path; },
        20 * x.p.reply_ns(), "a resend of the unacknowledged READ_RESP");
    x.check((again.v().flags & wire::bth_flag::retx) != 0, "a resent READ_RESP lacks the RETX flag");
    x.check((again.v().flags & wire::bth_flag::ack_req) != 0, "a resent READ_RESP lacks ACK_REQ");
    x.check(again.v().payload.size() == 100, "the resend does not carry the same bytes");
}

CONFORMANCE_TEST(nak_rkey_invalid_writes_nothing, "8.2", "3.7", "10.4")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    msg_spec m = spec_of(wire::opcode::write, r, 0, pattern(100, 12), 1);
    m.rkey = r.rkey ^ 0x00ff00ffu;
    const auto mark = x.mark("rx_access_errors");
    const sent_msg s = x.p.send_message(c, m);
    const rx_pkt n = expect_nak(x, c, wire::nak_reason::rkey_invalid, "for an unknown rkey");
    x.check(n.v().path == 1 && n.v().psn == s.pkts[0].psn, "the NAK does not name the refused packet (path/psn)");
    x.check(n.v().nak->stream.host() == m.stream && n.v().nak->msn.host() == s.msn,
            "the NAK does not name the refused message (stream/msn)");
    x.check(all_zero(x.mem(r, 0, 4096)), "bytes were written despite the bad rkey");
    x.check_counted(mark);
}

CONFORMANCE_TEST(nak_access_denied, "8.2", "3.7")
{
    // A region without REMOTE_WRITE refuses a WRITE...
    {
        tconn& c = x.p.connect();
        const region r = x.mr(4096, access::local_write | access::remote_read);
        x.p.send_message(c, spec_of(wire::opcode::write, r, 0, pattern(64, 13)));
        expect_nak(x, c, wire::nak_reason::access_denied, "for a WRITE to a region without REMOTE_WRITE");
        x.check(all_zero(x.mem(r, 0, 256)), "bytes were written to a region without REMOTE_WRITE");
    }
    // ...and one without REMOTE_READ a READ.
    tconn& c = x.p.connect();
    const region r = x.mr(4096, access::local_write | access::remote_write);
    msg_spec m;
    m.op = wire::opcode::read_req;
    m.va = r.va;
    m.rkey = r.rkey;
    m.read_len = 64;
    x.p.send_message(c, m);
    expect_nak(x, c, wire::nak_reason::access_denied, "for a READ of a region without REMOTE_READ");
}

CONFORMANCE_TEST(nak_out_of_bounds_writes_nothing, "8.2", "3.7")
{
    {
        tconn& c = x.p.connect();
        const region r = x.rw_mr(4096);
        // 1500 bytes from 1000 before the end: the first packet alone would fit.
        const sent_msg s = x.p.build_message(c, spec_of(wire::opcode::write, r, 4096 - 1000, pattern(1500, 14), 0));
        x.p.send_pkt(c, s.pkts[0]);
        expect_nak(x, c, wire::nak_reason::out_of_bounds, "for a WRITE running past the region");
        x.check(all_zero(x.mem(r, 0, 4096)), "a WRITE that fails the bounds check wrote bytes");
    }
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    msg_spec m;
    m.op = wire::opcode::read_req;
    m.va = r.va + 4000;
    m.rkey = r.rkey;
    m.read_len = 200;
    x.p.send_message(c, m);
    expect_nak(x, c, wire::nak_reason::out_of_bounds, "for a READ running past the region");
}

CONFORMANCE_TEST(nak_rnr_is_not_fatal_and_repeats, "8.2", "3.7", "5.2")
{
    tconn& c = x.p.connect();
    const region buf = x.mr(256, access::local_write);
    msg_spec m;
    m.op = wire::opcode::send;
    m.payload = pattern(64, 15);
    m.path = 2;
    const sent_msg s = x.p.send_message(c, m);
    const rx_pkt n = expect_nak(x, c, wire::nak_reason::rnr, "for a SEND with no receive posted");
    x.check(n.v().psn == s.pkts[0].psn && n.v().path == 2, "the RNR NAK does not name the packet");
    x.p.send_pkt(c, s.pkts[0]);
    expect_nak(x, c, wire::nak_reason::rnr, "again for the same SEND resent (a NAKed PSN is not recorded)");
    x.check(x.t.state(c.iut_id) == conn_state::established, "an RNR moved the connection out of ESTABLISHED");
    x.post_recv(c, 2, buf, 0, 256, 41);
    x.p.send_pkt(c, s.pkts[0]);
    const rx_pkt a = expect_ack(x, c, 2, s.pkts[0].psn + 1, "for the SEND once a receive is posted");
    x.check(a.v().ack->rx_pkts.host() == 1, "the resent SEND was not counted as received");
    const completion w = x.wait_wc(41, x.p.reply_ns());
    x.check(w.status == wc_status::success && w.byte_len == 64, "the receive did not complete with the SEND");
    x.check(x.mem(buf, 0, 64) == m.payload, "the SEND's bytes are not in the receive");
}

CONFORMANCE_TEST(nak_length_error_writes_nothing, "8.2", "3.7", "7.5")
{
    tconn& c = x.p.connect();
    const region buf = x.mr(256, access::local_write);
    x.post_recv(c, 2, buf, 0, 32, 42);
    msg_spec m;
    m.op = wire::opcode::send;
    m.payload = pattern(64, 16);
    x.p.send_message(c, m);
    expect_nak(x, c, wire::nak_reason::length_error, "for a SEND longer than its receive");
    x.check(all_zero(x.mem(buf, 0, 256)), "a SEND longer than its receive wrote bytes");
    const completion w = x.wait_wc(42, x.p.reply_ns());
    x.check(w.status == wc_status::loc_len_err, "the receive completed with " + std::string(to_string(w.status)) +
                                                    ", expected loc_len_err (it was too short)");
}

CONFORMANCE_TEST(later_packet_must_match_the_first, "8.1", "3.7")
{
    struct variant {
        const char* what;
        size_t at;
        uint32_t delta;
    };
    for (const variant& v : {variant{"rkey", at::rkey, 0x00010000u}, variant{"ssn", at::ssn, 1},
                             variant{"va", at::va + 4, 0x100}, variant{"stream", at::stream, 0x00010000u}}) {
        tconn& c = x.p.connect();
        const region r = x.rw_mr(8192);
        const region other = x.rw_mr(8192);
        const sent_msg s = x.p.build_message(c, spec_of(wire::opcode::write, r, 0, pattern(2048, 17), 0));
        x.p.send_pkt(c, s.pkts[0]);
        x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK for the first packet");
        std::vector<uint8_t> b = s.pkts[1].bytes;
        const uint32_t old = uint32_t(b[v.at] << 24 | b[v.at + 1] << 16 | b[v.at + 2] << 8 | b[v.at + 3]);
        // For the rkey: another key that is valid, but not the message's.
        poke32(b, v.at, v.at == at::rkey ? other.rkey : old + v.delta);
        x.p.send_on(c, b, 0);
        expect_nak(x, c, wire::nak_reason::invalid_request,
                   std::string("for a second packet whose ") + v.what + " differs from the first's");
        x.check(all_zero(x.mem(r, 1024, 1024)) && all_zero(x.mem(other, 0, 4096)),
                std::string("the inconsistent packet (") + v.what + ") wrote bytes");
        x.p.close_all();
    }
}

CONFORMANCE_TEST(committed_message_is_not_replayed, "8.1", "5.2")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> a = pattern(64, 18);
    msg_spec m = spec_of(wire::opcode::write, r, 0, a, 0);
    const sent_msg s = x.p.send_message(c, m);
    expect_ack(x, c, 0, s.pkts[0].psn + 1, "for the WRITE");
    // The same message (msn, ssn) again under a fresh PSN, with other bytes.
    m.msn = s.msn;
    m.ssn = s.ssn;
    m.payload = pattern(64, 19);
    const sent_msg again = x.p.send_message(c, m);
    expect_ack(x, c, 0, again.pkts[0].psn + 1, "for the repeated message (dropped, but its PSN recorded)");
    x.check(x.mem(r, 0, 64) == a, "a message already committed was written again");
}

CONFORMANCE_TEST(error_state_naks_data_and_refuses_posts, "7.5", "10.1", "3.7")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    msg_spec bad = spec_of(wire::opcode::write, r, 0, pattern(64, 20), 0);
    bad.rkey ^= 0x00ff00ffu;
    const sent_msg s = x.p.send_message(c, bad);
    expect_nak(x, c, wire::nak_reason::rkey_invalid, "for the bad rkey");
    // The refused packet again: NAKed again with the original reason.
    x.p.send_pkt(c, s.pkts[0]);
    expect_nak(x, c, wire::nak_reason::rkey_invalid, "for the refused packet resent (its original reason)");
    // A new, valid message: NAKed (INVALID_REQUEST) since the connection is in ERROR.
    x.p.send_message(c, spec_of(wire::opcode::write, r, 0, pattern(64, 21), 1));
    expect_nak(x, c, wire::nak_reason::invalid_request, "for data arriving in ERROR");
    x.check(all_zero(x.mem(r, 0, 256)), "data was placed in ERROR");
    x.check(x.t.state(c.iut_id) == conn_state::error, "the connection is not in ERROR after a fatal NAK");
    send_req w;
    w.op = wr_opcode::write;
    w.stream = 2;
    w.local = r;
    w.length = 16;
    w.remote_va = 0x1000;
    w.rkey = 1;
    w.wr_id = 99;
    const post_result ps = x.t.post_send(c.iut_id, w);
    x.check(ps == post_result::conn_not_usable, "post_send in ERROR returned " + std::string(to_string(ps)));
    const post_result pr = x.t.post_recv(c.iut_id, 2, r, 0, 16, 98);
    x.check(pr == post_result::conn_not_usable, "post_recv in ERROR returned " + std::string(to_string(pr)));
}

CONFORMANCE_TEST(error_flushes_posted_receives, "7.5", "10.4", "9.2")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const region buf = x.mr(256, access::local_write);
    x.post_recv(c, 3, buf, 0, 64, 51);
    x.post_recv(c, 3, buf, 64, 64, 52);
    msg_spec bad = spec_of(wire::opcode::write, r, 0, pattern(64, 22));
    bad.rkey ^= 0x00ff00ffu;
    x.p.send_message(c, bad);
    expect_nak(x, c, wire::nak_reason::rkey_invalid, "for the bad rkey");
    const completion a = x.wait_wc(51, x.p.reply_ns());
    const completion b = x.wait_wc(52, x.p.reply_ns());
    x.check(a.status == wc_status::wr_flush_err && b.status == wc_status::wr_flush_err,
            "posted receives did not complete with wr_flush_err when the connection failed");
    x.check(a.op == wc_opcode::recv && b.op == wc_opcode::recv, "flushed receives are not reported as recv");
    x.check(x.find_wc(51) < x.find_wc(52), "flushed receives out of posting order");
}

CONFORMANCE_TEST(message_slot_conflict_refused_rnr, "4.2")
{
    offer o;
    o.max_msgs = 2;
    tconn& c = x.p.connect(o);
    x.check(c.max_msgs == 2, "the IUT did not agree to max_msgs 2");
    const region r = x.rw_mr(8192);
    // msn 0 stays open (one of its two packets), then msn 2 needs the same slot.
    const sent_msg open = x.p.build_message(c, spec_of(wire::opcode::write, r, 0, pattern(2048, 23), 0));
    x.p.send_pkt(c, open.pkts[0]);
    x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK for the first packet of msn 0");
    x.p.build_message(c, spec_of(wire::opcode::write, r, 4096, pattern(64, 24), 1)); // msn 1, unsent
    const sent_msg clash = x.p.build_message(c, spec_of(wire::opcode::write, r, 6144, pattern(64, 25), 2));
    x.check(clash.msn % 2 == open.msn % 2, "tester numbering");
    x.p.send_pkt(c, clash.pkts[0]);
    const rx_pkt a = x.p.must(tester::reply_for(c), x.p.reply_ns(), "a reply to the clashing packet");
    x.check(a.is(wire::opcode::nak) && a.v().nak->reason == wire::nak_reason::rnr,
            "the packet whose slot holds another msn was answered with " + describe({a}) +
                ": it must be refused with NAK RNR (not recorded)");
    x.check(all_zero(x.mem(r, 6144, 64)), "the clashing message was written");
}

} // namespace metaroce::conformance
