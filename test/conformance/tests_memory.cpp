// Packet shape and memory safety: the mtu grid, the message size limit, completion by
// packet index, and memory that goes away under a message (spec 3.7, 4.1, 4.3, 8.1,
// 8.3-8.5).
#include "helpers.hpp"

namespace metaroce::conformance {

namespace {

std::vector<uint8_t> write_packet(tester& p, const tconn& c, const region& r, uint32_t psn, uint32_t msg_len,
                                  uint32_t offset, const std::vector<uint8_t>& payload, bool last)
{
    wire::bth_fields b{wire::opcode::write, uint16_t(last ? wire::bth_flag::last | wire::bth_flag::ack_req : 0),
                       c.iut_id, psn, 0, 0, p.now32()};
    wire::msg_fields f;
    f.stream = 2;
    f.msg_len = msg_len;
    f.offset = offset;
    f.va = r.va;
    f.rkey = r.rkey;
    return p.data_pkt(b, f, payload);
}

} // namespace

CONFORMANCE_TEST(packet_off_the_grid_refused, "4.3", "8.1")
{
    struct shape {
        const char* what;
        uint32_t msg_len, offset, len;
        bool last;
    };
    for (const shape& s : {shape{"an offset that is not a multiple of the mtu", 2048, 512, 1024, false},
                           shape{"a first packet shorter than the mtu", 2048, 0, 1000, false},
                           shape{"a last packet of the wrong size", 2048, 1024, 1000, true}}) {
        tconn& c = x.p.connect();
        const region r = x.rw_mr(4096);
        const auto mark = x.mark("rx_bad_shape");
        x.p.send_on(c, write_packet(x.p, c, r, c.next_psn[0]++, s.msg_len, s.offset, pattern(s.len, 1), s.last), 0);
        expect_nak(x, c, wire::nak_reason::invalid_request, std::string("for ") + s.what);
        x.check(all_zero(x.mem(r, 0, 4096)), std::string("a packet with ") + s.what + " wrote bytes");
        x.check_counted(mark);
        x.p.close_all();
    }
}

CONFORMANCE_TEST(send_scatters_over_a_receive_list, "4.5", "8.3")
{
    if (!x.t.caps().sge_lists) {
        x.na("the target posts one piece per receive (its application interface)");
    }
    tconn& c = x.p.connect();
    const region buf = x.mr(4096, access::local_write);
    const sge pieces[] = {{buf.va, 1000, buf.lkey}, {buf.va + 1500, 1300, buf.lkey}, {buf.va + 3000, 700, buf.lkey}};
    x.check(x.t.post_recv_list(c.iut_id, 2, pieces, 51) == post_result::ok, "a 3-piece receive was refused");
    msg_spec m;
    m.op = wire::opcode::send;
    m.payload = pattern(3000, 21); // 3 packets at mtu 1024, each crossing a piece boundary
    x.p.send_message(c, m);
    const completion w = x.wait_wc(51, x.p.reply_ns());
    x.check(w.status == wc_status::success && w.byte_len == 3000, "the scattered receive did not complete");
    std::vector<uint8_t> got = x.mem(buf, 0, 1000);
    for (const auto& [off, len] : {std::pair<uint64_t, uint64_t>{1500, 1300}, {3000, 700}}) {
        const auto part = x.mem(buf, off, len);
        got.insert(got.end(), part.begin(), part.end());
    }
    x.check(got == m.payload, "the SEND's bytes are not in the pieces of the receive, in list order");
    x.check(all_zero(x.mem(buf, 1000, 500)) && all_zero(x.mem(buf, 2800, 200)) && all_zero(x.mem(buf, 3700, 396)),
            "bytes landed between or beyond the pieces");
}

CONFORMANCE_TEST(message_longer_than_2g_refused, "4.1", "8.1")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    x.p.send_on(c, write_packet(x.p, c, r, c.next_psn[0]++, (1u << 31) + 1024, 0, pattern(1024, 2), false), 0);
    expect_nak(x, c, wire::nak_reason::invalid_request, "for a WRITE with msg_len 2^31 + 1024");
    // And the IUT as requester refuses to post one.
    const region src = x.mr(4096, access::local_write);
    tconn& d = x.p.connect();
    send_req big = req(wr_opcode::write, 2, src, 0, 0, 1);
    big.length = (1u << 31) + 1;
    x.check(x.t.post_send(d.iut_id, big) != post_result::ok, "posting a message over 2^31 bytes was accepted");
}

CONFORMANCE_TEST(repeated_offset_cannot_complete_a_message, "8.4")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> data = pattern(3000, 3);
    msg_spec m;
    m.op = wire::opcode::write;
    m.va = r.va;
    m.rkey = r.rkey;
    m.payload = data;
    m.path = 0;
    const sent_msg s = x.p.build_message(c, m);
    x.p.send_pkt(c, s.pkts[0]);
    x.p.send_pkt(c, s.pkts[1]);
    const uint32_t cum = s.pkts[1].psn + 1;
    x.p.must([&](const rx_pkt& k) { return tester::ack_for(c, 0)(k) && k.v().psn == cum; }, x.p.reply_ns(),
             "ACK for the first two packets");
    // The middle packet again under a fresh PSN, in place of the last one.
    std::vector<uint8_t> again = s.pkts[1].bytes;
    poke32(again, at::psn, s.pkts[2].psn);
    x.p.send_on(c, again, 0);
    expect_nak(x, c, wire::nak_reason::invalid_request, "for a message completed by a repeated offset");
    x.check(all_zero(x.mem(r, 3000 - 8, 8)), "a message completed by a repeated offset was committed");
    x.check(x.t.state(c.iut_id) == conn_state::error, "the connection is not in ERROR");
}

CONFORMANCE_TEST(region_deregistered_under_a_write, "8.3", "8.2")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    msg_spec m;
    m.op = wire::opcode::write;
    m.va = r.va;
    m.rkey = r.rkey;
    m.payload = pattern(2048, 4);
    m.path = 0;
    const sent_msg s = x.p.build_message(c, m);
    x.p.send_pkt(c, s.pkts[0]);
    x.p.must(tester::ack_for(c, 0), x.p.reply_ns(), "ACK for the first packet");
    x.check(x.t.dereg_mr(r), "the target could not deregister the region");
    x.p.send_pkt(c, s.pkts[1]);
    expect_nak(x, c, wire::nak_reason::rkey_invalid, "for a packet whose region went away");
    x.check(all_zero(x.mem(r, 1024, 1024)), "a packet was written to a deregistered region");
    x.check(x.t.state(c.iut_id) == conn_state::error, "the connection is not in ERROR");
}

CONFORMANCE_TEST(receive_buffer_deregistered_under_a_send, "8.3", "3.7")
{
    tconn& c = x.p.connect();
    const region buf = x.mr(256, access::local_write);
    x.post_recv(c, 2, buf, 0, 256, 500);
    x.check(x.t.dereg_mr(buf), "the target could not deregister the region");
    msg_spec m;
    m.op = wire::opcode::send;
    m.payload = pattern(64, 5);
    x.p.send_message(c, m);
    expect_nak(x, c, wire::nak_reason::remote_operation, "for a SEND into a receive whose buffer went away");
    const completion w = x.wait_wc(500, x.p.reply_ns());
    x.check(w.status == wc_status::loc_prot_err, "the receive completed with " + std::string(to_string(w.status)) +
                                                     ", expected loc_prot_err");
    x.check(all_zero(x.mem(buf, 0, 256)), "a SEND wrote into a deregistered buffer");
}

CONFORMANCE_TEST(read_source_deregistered_while_answering, "8.5", "3.7")
{
    tconn& c = x.p.connect();
    x.p.manual_acks(c);
    const region r = x.rw_mr(64 * 1024);
    msg_spec m;
    m.op = wire::opcode::read_req;
    m.va = r.va;
    m.rkey = r.rkey;
    m.read_len = 48 * 1024; // more packets than the IUT's first window
    m.stream = 3;
    const sent_msg s = x.p.send_message(c, m);
    const std::vector<rx_pkt> first = new_packets(x, c, x.p.burst_ns(), SIZE_MAX, k_patient_ns);
    x.check(!first.empty() && first.size() < 48, "the READ's response did not stop at a window (" +
                                                      std::to_string(first.size()) + " packets)");
    x.check(x.t.dereg_mr(r), "the target could not deregister the region");
    ack_all(x, c);
    const rx_pkt n = x.p.must(tester::nak_for(c), x.p.reply_ns(), "a NAK for the READ whose source went away");
    x.check(n.v().nak->reason == wire::nak_reason::rkey_invalid,
            "the NAK's reason is " + std::to_string(uint8_t(n.v().nak->reason)) + ", expected RKEY_INVALID (2)");
    x.check(n.v().nak->stream.host() == 3 && n.v().nak->msn.host() == s.msn, "the NAK does not name the READ");
    x.check(n.v().psn == 0 && n.v().path == 0, "the NAK's psn/path are not 0");
    x.check(x.t.state(c.iut_id) == conn_state::error, "the responder did not go to ERROR");
}

CONFORMANCE_TEST(read_nak_after_read_req_acknowledged, "3.7", "8.5")
{
    tconn& c = x.p.connect();
    const region dst = x.mr(4096, access::local_write);
    x.post_send(c, req(wr_opcode::read, 2, dst, 0, 1000, 510));
    const rx_pkt rq = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the READ_REQ"); // auto-acknowledged
    x.p.idle(x.p.quiet_ns() / 4);
    x.p.send_on(c, x.p.nak_pkt(c, 0, 0, wire::nak_reason::out_of_bounds, 2, rq.v().msn), 0);
    const completion w = x.wait_wc(510, x.p.reply_ns());
    x.check(w.status == wc_status::rem_access_err, "the READ completed with " + std::string(to_string(w.status)) +
                                                       ", expected rem_access_err");
    x.check(x.t.state(c.iut_id) == conn_state::error, "the requester did not go to ERROR");
}

CONFORMANCE_TEST(send_buffer_deregistered_under_a_request, "8.3")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    const region src = src_region(x, 4096, 6);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64, 520));
    x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the WRITE");
    x.check(x.t.dereg_mr(src), "the target could not deregister the region");
    // Unacknowledged, the packet is resent: built again, under the (now dead) lkey.
    const completion w = x.wait_wc(520, 40 * x.p.reply_ns());
    x.check(w.status == wc_status::loc_prot_err, "the request completed with " + std::string(to_string(w.status)) +
                                                     ", expected loc_prot_err");
}

CONFORMANCE_TEST(read_response_into_deregistered_buffer, "8.3")
{
    tconn& c = x.p.connect();
    const region dst = x.mr(4096, access::local_write);
    x.post_send(c, req(wr_opcode::read, 2, dst, 0, 1000, 530));
    const rx_pkt rq = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the READ_REQ");
    x.check(x.t.dereg_mr(dst), "the target could not deregister the region");
    msg_spec m;
    m.op = wire::opcode::read_resp;
    m.stream = 2;
    m.msn = rq.v().msn;
    m.payload = pattern(1000, 7);
    x.p.send_message(c, m);
    const completion w = x.wait_wc(530, x.p.reply_ns());
    x.check(w.status == wc_status::loc_prot_err, "the READ completed with " + std::string(to_string(w.status)) +
                                                     ", expected loc_prot_err");
    x.check(all_zero(x.mem(dst, 0, 1000)), "READ_RESP bytes landed in a deregistered buffer");
}

} // namespace metaroce::conformance
