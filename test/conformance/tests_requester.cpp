// The IUT as requester: how it numbers, cuts and spreads messages, how it reacts to
// ACKs, SACK gaps, NAKs and silence, and how it completes work requests
// (spec 4.1-4.4, 5.3, 5.5, 5.6, 5.8, 6.1, 9).
#include <algorithm>
#include <optional>
#include <set>

#include "helpers.hpp"
#include "metaroce/seq.hpp"

namespace metaroce::conformance {


CONFORMANCE_TEST(message_cut_at_mtu_with_same_headers, "4.3", "3.2", "3.3", "9.2")
{
    tconn& c = x.p.connect();
    const region src = src_region(x, 4096, 1);
    x.post_send(c, req(wr_opcode::write, 2, src, 10, 2600, 1));
    std::map<uint32_t, rx_pkt> by_offset;
    while (by_offset.size() < 3) {
        const rx_pkt p = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the WRITE's three packets");
        x.check(p.v().offset % 1024 == 0 && p.v().offset < 2600, "a packet off the mtu grid");
        by_offset.emplace(p.v().offset, p);
    }
    const wire::packet_view& f = by_offset.begin()->second.v();
    const std::vector<uint8_t> src_bytes = pattern(4096, 1);
    for (const auto& [off, p] : by_offset) {
        const wire::packet_view& v = p.v();
        x.check(v.op == wire::opcode::write, "a WRITE packet with opcode " + op_name(p));
        x.check(v.msn == f.msn && v.ssn == f.ssn && v.stream == 2 && v.msg_len == 2600 && v.recv_seq == 0,
                "the packets of one message carry different MSG fields");
        x.check(v.va == k_remote_va && v.rkey == k_remote_rkey, "a packet without the message's va/rkey");
        const size_t want = std::min<size_t>(1024, 2600 - off);
        x.check(v.payload.size() == want, "packet at offset " + std::to_string(off) + " carries " +
                                              std::to_string(v.payload.size()) + " bytes, not " + std::to_string(want));
        x.check(std::equal(v.payload.begin(), v.payload.end(), src_bytes.begin() + 10 + off), "payload bytes differ");
        const bool last = off == 2048;
        x.check(v.is_last() == last, "LAST flag set on a packet that is not the last, or missing");
        if (last) {
            x.check((v.flags & wire::bth_flag::ack_req) != 0, "the last packet lacks ACK_REQ");
        }
    }
    const completion w = x.wait_wc(1, x.p.reply_ns());
    x.check(w.status == wc_status::success && w.op == wc_opcode::write && w.byte_len == 2600,
            "the WRITE's completion is wrong (" + std::string(to_string(w.status)) + ")");
}

CONFORMANCE_TEST(empty_message_is_one_packet, "4.3")
{
    tconn& c = x.p.connect();
    const region src = src_region(x, 64, 2);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 0, 3));
    const rx_pkt p = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the empty WRITE");
    x.check(p.v().msg_len == 0 && p.v().payload.empty() && p.v().offset == 0, "not an empty packet");
    x.check(p.v().is_last() && (p.v().flags & wire::bth_flag::ack_req) != 0, "LAST/ACK_REQ missing");
    x.check(x.wait_wc(3, x.p.reply_ns()).status == wc_status::success, "the empty WRITE did not complete");
}

CONFORMANCE_TEST(read_request_then_response_placed, "4.3", "4.4", "8.3", "9.2")
{
    tconn& c = x.p.connect();
    const region dst = x.mr(4096, access::local_write);
    x.post_send(c, req(wr_opcode::read, 2, dst, 100, 3000, 4));
    const rx_pkt rq = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the READ_REQ");
    const wire::packet_view& v = rq.v();
    x.check(v.op == wire::opcode::read_req && v.payload.empty() && v.msg_len == 3000 && v.offset == 0,
            "the READ is not one READ_REQ packet without payload and with msg_len 3000");
    x.check(v.is_last() && (v.flags & wire::bth_flag::ack_req) != 0, "READ_REQ lacks LAST or ACK_REQ");
    x.check(v.va == k_remote_va && v.rkey == k_remote_rkey, "READ_REQ RETH wrong");
    // The tester answers with READ_RESP packets, last first: each lands at local + offset.
    msg_spec m;
    m.op = wire::opcode::read_resp;
    m.stream = 2;
    m.msn = v.msn;
    m.payload = pattern(3000, 3);
    const sent_msg resp = x.p.build_message(c, m);
    for (auto it = resp.pkts.rbegin(); it != resp.pkts.rend(); ++it) {
        x.p.send_pkt(c, *it);
    }
    const completion w = x.wait_wc(4, x.p.reply_ns());
    x.check(w.status == wc_status::success && w.op == wc_opcode::read && w.byte_len == 3000,
            "the READ's completion is wrong (" + std::string(to_string(w.status)) + ")");
    x.check(x.mem(dst, 100, 3000) == m.payload, "READ_RESP bytes not at local + offset");
    x.check(all_zero(x.mem(dst, 0, 100)) && all_zero(x.mem(dst, 3100, 996)), "bytes outside the READ changed");
}

CONFORMANCE_TEST(messages_numbered_per_connection_and_stream, "4.1")
{
    tconn& c = x.p.connect();
    const region src = src_region(x, 4096, 4);
    struct posted {
        wr_opcode op;
        uint16_t stream;
        uint32_t ssn, recv_seq;
    };
    const posted order[] = {{wr_opcode::write, 2, 0, 0},     {wr_opcode::send, 2, 1, 0},
                            {wr_opcode::write_imm, 3, 0, 0}, {wr_opcode::send, 2, 2, 1},
                            {wr_opcode::read, 3, 1, 0},      {wr_opcode::send_imm, 3, 2, 1}};
    uint64_t id = 10;
    for (const posted& p : order) {
        x.post_send(c, req(p.op, p.stream, src, 0, 64, id++));
    }
    std::map<uint32_t, rx_pkt> by_msn;
    while (by_msn.size() < 6) {
        const rx_pkt p = x.p.must([&](const rx_pkt& k) { return tester::data_for(c)(k) && k.v().stream >= 2; },
                                  x.p.reply_ns(), "a packet of each of the six messages");
        by_msn.emplace(p.v().msn, p);
    }
    const uint32_t first = by_msn.begin()->first;
    size_t i = 0;
    for (const auto& [msn, p] : by_msn) {
        const posted& want = order[i];
        x.check(msn == first + i, "msns are not consecutive in posting order");
        x.check(p.v().stream == want.stream, "message " + std::to_string(i) + " (posting order) has msn out of order");
        x.check(p.v().ssn == want.ssn, "message " + std::to_string(i) + " has ssn " + std::to_string(p.v().ssn) +
                                           ", expected " + std::to_string(want.ssn));
        x.check(p.v().recv_seq == want.recv_seq, "message " + std::to_string(i) + " has recv_seq " +
                                                     std::to_string(p.v().recv_seq) + ", expected " +
                                                     std::to_string(want.recv_seq));
        ++i;
    }
}

CONFORMANCE_TEST(message_window_respected, "4.2", "10.5")
{
    offer o;
    o.max_msgs = 2;
    tconn& c = x.p.connect(o);
    x.check(c.max_msgs == 2, "the IUT did not agree to max_msgs 2");
    x.p.manual_acks(c);
    admit(x, c, 19);
    const region src = src_region(x, 4096, 5);
    for (uint64_t i = 0; i < 4; ++i) {
        x.post_send(c, req(wr_opcode::write, 2, src, i * 64, 64, 20 + i));
    }
    std::set<uint32_t> msns;
    for (const rx_pkt& p : new_packets(x, c, x.p.burst_ns())) {
        msns.insert(p.v().msn);
    }
    x.check(msns.size() == 2, std::to_string(msns.size()) + " messages on the wire with max_msgs 2 and none completed");
    const uint32_t first = *msns.begin();
    x.check(*msns.rbegin() == first + 1, "the messages on the wire are not the two oldest");
    ack_all(x, c);
    for (const rx_pkt& p : new_packets(x, c, x.p.reply_ns(), 2)) {
        msns.insert(p.v().msn);
    }
    x.check(x.find_wc(21) != nullptr || x.wait_wc(21, x.p.reply_ns()).status == wc_status::success,
            "the first two messages did not complete");
    x.check(msns.size() == 4 && *msns.rbegin() == first + 3, "the next messages did not follow the completions");
}

CONFORMANCE_TEST(new_packets_round_robin_over_paths, "5.3", "1.2", "1.3")
{
    tconn& c = x.p.connect();
    x.check(c.paths == 4, "the IUT did not agree to 4 paths");
    const region src = src_region(x, 8192, 6);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 8192, 30));
    std::vector<rx_pkt> pk = new_packets(x, c, x.p.reply_ns(), 8);
    x.check(pk.size() == 8, "the 8 packets of the WRITE did not all go out");
    // The rule is about which path each segment is given, in the order the segments
    // are made (by offset, spec 4.3); a backend that sends one socket's datagrams
    // together (kernel UDP: one sendmmsg per source port) reorders the wire, not that.
    std::stable_sort(pk.begin(), pk.end(), [](const rx_pkt& a, const rx_pkt& b) { return a.v().offset < b.v().offset; });
    std::map<uint8_t, uint32_t> last;
    for (size_t i = 0; i < pk.size(); ++i) {
        const wire::packet_view& v = pk[i].v();
        if (i > 0) {
            x.check(v.path == (pk[i - 1].v().path + 1) % 4,
                    "new packets go to paths " + std::to_string(pk[i - 1].v().path) + " then " +
                        std::to_string(v.path) + ": not round robin");
        }
        if (auto it = last.find(v.path); it != last.end()) {
            x.check(v.psn == it->second + 1, "PSNs on a path are not consecutive");
        } else if (x.exact()) {
            x.check(v.psn == c.iut_isn, "a path's first PSN is not the ISN of the ACCEPT/CONNECT");
        }
        last[v.path] = v.psn;
    }
    x.check(x.wait_wc(30, x.p.reply_ns()).status == wc_status::success, "the WRITE failed");
}

CONFORMANCE_TEST(sack_gap_means_loss, "5.5", "10.3", "4.3", "6.3")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    admit(x, c, 59);
    const region src = src_region(x, 4096, 9);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 4096, 60));
    const std::vector<rx_pkt> pk = new_packets(x, c, x.p.reply_ns(), 4);
    x.check(pk.size() == 4, "the WRITE's 4 packets did not go out");
    const uint32_t p0 = pk[0].v().psn;
    std::bitset<wire::k_sack_bits> sack;
    sack[1] = sack[2] = sack[3] = true;
    const uint64_t t0 = x.t.now_ns();
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0, sack, pk[3].v().tx_ts, 3, 0), 0);
    // (A tail-loss probe of the newest PSN may come first on a real clock.)
    const rx_pkt r = x.p.must([&](const rx_pkt& k) { return tester::data_for(c)(k) && is_retx(k) && k.v().psn == p0; },
                              x.p.reply_ns(), "a resend of the PSN the SACK shows missing");
    x.check((r.v().flags & wire::bth_flag::ack_req) != 0, "a resend without ACK_REQ");
    if (x.exact()) {
        x.check(r.d->at_ns == t0, "the gap was resent only after a timer, not on the SACK");
    }
    // Loss found by SACK leaves the windows alone: more new packets still go out.
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + 4, {}, r.v().tx_ts, 1, 0), 0);
    x.check(x.wait_wc(60, x.p.reply_ns()).status == wc_status::success, "the WRITE did not complete");
}

CONFORMANCE_TEST(stale_ack_ignored_and_credit_once, "5.5")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    admit(x, c, 69);
    const region src = src_region(x, 4096, 10);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 2048, 70));
    const std::vector<rx_pkt> pk = new_packets(x, c, x.p.reply_ns(), 2);
    x.check(pk.size() == 2, "the WRITE's 2 packets did not go out");
    const uint32_t p0 = pk[0].v().psn;
    const auto mark = x.mark("rx_stale_ack");
    // Beyond next_psn: ignored.
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + 10, {}, pk[1].v().tx_ts, 2, 0), 0);
    // The first packet acknowledged twice: credited once, so the message is not done.
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + 1, {}, pk[0].v().tx_ts, 1, 0), 0);
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + 1, {}, pk[0].v().tx_ts, 0, 0), 0);
    x.p.idle(x.exact() ? 10'000 : x.p.quiet_ns());
    x.check(!x.completed(70), "the WRITE completed before its second packet was acknowledged");
    x.check_counted(mark);
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + 2, {}, pk[1].v().tx_ts, 1, 0), 0);
    x.check(x.wait_wc(70, x.p.reply_ns()).status == wc_status::success, "the WRITE did not complete");
}

CONFORMANCE_TEST(tail_loss_probe_then_timeout, "5.6")
{
    x.need_virtual_time();
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    const region src = src_region(x, 8192, 11);
    // One round trip of exactly 10 us gives srtt 10 us: PTO = min(2*10 + 4, rto) = 24 us.
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64, 80));
    const rx_pkt first = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the first WRITE");
    x.p.idle(10'000 - (x.t.now_ns() - first.d->at_ns));
    x.p.send_on(c, x.p.ack_pkt(c, 0, first.v().psn + 1, {}, first.v().tx_ts, 1, 0), 0);
    x.wait_wc(80, 100'000);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 3072, 81));
    const std::vector<rx_pkt> pk = new_packets(x, c, 1'000, 3);
    x.check(pk.size() == 3, "the 3 packets did not go out");
    const uint64_t t0 = pk[2].d->at_ns;
    const auto resends = x.p.collect([&](const rx_pkt& k) { return tester::data_for(c)(k) && is_retx(k); }, 150'000);
    x.check(!resends.empty(), "nothing was resent");
    const rx_pkt& tlp = resends.front();
    x.check(tlp.v().psn == pk[2].v().psn, "the first resend is not the newest packet (tail-loss probe)");
    const uint64_t dt = tlp.d->at_ns - t0;
    x.check(dt >= 23'000 && dt <= 26'000, "tail-loss probe after " + std::to_string(dt) + " ns, expected 24 us");
    size_t rto_resends = 0;
    for (size_t i = 1; i < resends.size(); ++i) {
        const uint64_t at = resends[i].d->at_ns - t0;
        x.check(at >= 99'000, "a second resend after " + std::to_string(at) + " ns: the probe goes once, then the RTO");
        rto_resends += at < 110'000;
    }
    x.check(rto_resends == 3, std::to_string(rto_resends) + " packets resent at the RTO, expected all 3 on the wire");
}

CONFORMANCE_TEST(timeouts_reroute_then_fail_path_and_probe, "5.6", "5.8", "10.2", "3.10")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    c.auto_control = false;
    const region src = src_region(x, 4096, 12);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64, 90));
    const rx_pkt first = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the WRITE");
    const uint64_t t0 = first.d->at_ns;
    std::vector<rx_pkt> seen;
    const auto pred = [&](const rx_pkt& k) {
        return (tester::data_for(c)(k) && is_retx(k)) || tester::op_for(c, wire::opcode::probe)(k);
    };
    // Until the second probe: what went out and when. (Later probes may be plane probes,
    // spec 5.9, on the schedule of their own.)
    size_t probes = 0;
    while (probes < 2) {
        const rx_pkt k = x.p.must(pred, 40 * x.p.reply_ns(), "resends and probes of a silent path");
        seen.push_back(k);
        probes += k.is(wire::opcode::probe);
    }
    // Drop the tail-loss probe (a resend on the original route before the first RTO).
    std::vector<rx_pkt> ev;
    for (const rx_pkt& k : seen) {
        if (!(k.d->udp_sport == first.d->udp_sport && !k.is(wire::opcode::probe))) {
            ev.push_back(k);
        }
    }
    x.check(!ev.empty() && !ev[0].is(wire::opcode::probe),
            "the first timeout did not resend the data (on a new route)");
    x.check(ev[0].d->udp_sport != first.d->udp_sport, "the resend after a timeout kept the UDP source port");
    size_t first_probe = 0;
    while (first_probe < ev.size() && !ev[first_probe].is(wire::opcode::probe)) {
        ++first_probe;
    }
    x.check(first_probe == 1, std::to_string(first_probe) + " data resends before the first probe: after " +
                                  "fail_after (2) timeouts a path carries only probes");
    // Each timeout moves the path off its current port. A driver with few source ports
    // (kernel UDP: 64 sockets) may come back to an older one; the exact target never does.
    std::set<uint16_t> ports{first.d->udp_sport};
    uint16_t last_port = first.d->udp_sport;
    for (size_t i = 0; i < ev.size(); ++i) {
        x.check(ev[i].d->udp_sport != last_port, "a timeout did not give the path a new UDP source port");
        last_port = ev[i].d->udp_sport;
        x.check(ports.insert(last_port).second || !x.exact(), "a timeout took a UDP source port the path had before");
        if (ev[i].is(wire::opcode::probe)) {
            x.check(ev[i].v().path == 0 && ev[i].v().dst_conn == c.id, "PROBE does not name the path / our connection");
        }
    }
    if (x.exact()) {
        // RTO 100 us (no RTT sample yet), doubling per consecutive timeout: 100, 200, 400.
        const uint64_t want[] = {100'000, 300'000, 700'000};
        for (size_t i = 0; i < ev.size() && i < 3; ++i) {
            const uint64_t at = ev[i].d->at_ns - t0;
            x.check(at >= want[i] && at <= want[i] + 2'000,
                    "timeout " + std::to_string(i + 1) + " fired after " + std::to_string(at / 1000) +
                        " us, expected " + std::to_string(want[i] / 1000) + " us (RTO doubling)");
        }
    }
}

CONFORMANCE_TEST(probe_ack_revives_failed_path, "5.8", "3.10", "10.2")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    c.auto_control = false;
    const region src = src_region(x, 4096, 13);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64, 91));
    x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the WRITE");
    const auto is_probe = tester::op_for(c, wire::opcode::probe);
    rx_pkt probe = x.p.must(is_probe, 40 * x.p.reply_ns(), "a PROBE of the failed path");
    // A PROBE_ACK with the wrong token must not revive the path.
    const auto mark = x.mark("rx_bad_token");
    x.p.send(x.p.probe_pkt(wire::opcode::probe_ack, c.iut_id, 0, probe.v().probe->token.host() ^ 1u,
                           probe.v().tx_ts),
             tx_opts{c.addr, probe.d->plane, probe.d->udp_sport, false});
    const auto early = x.p.collect([&](const rx_pkt& k) { return tester::data_for(c)(k) || is_probe(k); },
                                   x.exact() ? 20'000 : x.p.quiet_ns() / 4);
    bool data_early = false;
    for (const rx_pkt& k : early) {
        // On a loaded host the wait can outlast the probe's own timeout: the IUT probes
        // again (another route, another token) and the answer goes to the newest probe.
        data_early = data_early || !is_probe(k);
        probe = is_probe(k) ? k : probe;
    }
    x.check(!data_early, "a PROBE_ACK with a wrong token let data go on the failed path");
    x.check_counted(mark);
    // The right token: the queued resend goes on the probed route. A probe that shows up
    // instead was sent before our answer landed (a loaded host): it is answered too, and
    // the resend must take one of the routes answered.
    std::set<uint16_t> answered;
    std::optional<rx_pkt> again;
    for (int round = 0; round < 4 && !again; ++round) {
        x.p.send(x.p.probe_pkt(wire::opcode::probe_ack, c.iut_id, 0, probe.v().probe->token.host(), probe.v().tx_ts),
                 tx_opts{c.addr, probe.d->plane, probe.d->udp_sport, false});
        answered.insert(probe.d->udp_sport);
        const rx_pkt k = x.p.must([&](const rx_pkt& k) { return tester::data_for(c, 2)(k) || is_probe(k); },
                                  x.p.reply_ns(), "the queued resend after the PROBE_ACK");
        if (is_probe(k)) {
            probe = k;
        } else {
            again = k;
        }
    }
    x.check(again.has_value(), "the PROBE_ACK did not revive the path (only more probes)");
    x.check(answered.contains(again->d->udp_sport), "the resend did not take the probed route");
    x.p.send_on(c, x.p.ack_pkt(c, 0, again->v().psn + 1, {}, again->v().tx_ts, 1, 0), 0);
    x.check(x.wait_wc(91, x.p.reply_ns()).status == wc_status::success, "the WRITE did not complete");
}

CONFORMANCE_TEST(silent_path_fails_connection, "5.6", "7.5", "10.1", "10.2")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    c.auto_control = false;
    const region src = src_region(x, 4096, 14);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64, 92));
    const rx_pkt first = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the WRITE");
    const completion w = x.wait_wc(92, x.exact() ? 400'000'000 : 2'000'000'000);
    x.check(w.status == wc_status::retry_exc_err, "the request completed with " + std::string(to_string(w.status)) +
                                                      ", expected retry_exc_err");
    if (x.exact()) {
        const uint64_t after = x.t.now_ns() - first.d->at_ns;
        x.check(after >= 100'000'000, "the connection failed after " + std::to_string(after / 1000) +
                                          " us, before fail_silence (100 ms)");
    }
    x.check(x.t.state(c.iut_id) == conn_state::error, "the connection is not in ERROR");
}

CONFORMANCE_TEST(rnr_nak_holds_then_resends, "3.7", "8.2", "10.3")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    const region src = src_region(x, 4096, 15);
    x.post_send(c, req(wr_opcode::send, 2, src, 0, 64, 93));
    const rx_pkt p = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the SEND");
    const uint64_t t0 = x.t.now_ns();
    x.p.send_on(c, x.p.nak_pkt(c, 0, p.v().psn, wire::nak_reason::rnr, 2, p.v().msn), 0);
    const rx_pkt r = x.p.must(
        [&](const rx_pkt& k) { return tester::data_for(c, 2)(k) && k.v().psn == p.v().psn; },
        20 * x.p.reply_ns(), "the SEND resent after the RNR NAK");
    if (x.exact()) {
        const uint64_t dt = r.d->at_ns - t0;
        x.check(dt >= 50'000 && dt <= 60'000, "resent " + std::to_string(dt) + " ns after the RNR, expected rnr_delay (50 us)");
    }
    x.check(is_retx(r), "the resend after RNR lacks the RETX flag");
    x.check(x.t.state(c.iut_id) == conn_state::established, "RNR moved the connection out of ESTABLISHED");
    x.p.send_on(c, x.p.ack_pkt(c, 0, p.v().psn + 1, {}, r.v().tx_ts, 1, 0), 0);
    x.check(x.wait_wc(93, x.p.reply_ns()).status == wc_status::success, "the SEND did not complete");
}

CONFORMANCE_TEST(fatal_nak_fails_requests_in_order, "3.7", "7.5", "9.2", "10.5")
{
    struct reason_case {
        wire::nak_reason reason;
        wr_opcode op;
        wc_status want;
    };
    for (const reason_case& rc : {reason_case{wire::nak_reason::rkey_invalid, wr_opcode::write, wc_status::rem_access_err},
                                  reason_case{wire::nak_reason::access_denied, wr_opcode::write, wc_status::rem_access_err},
                                  reason_case{wire::nak_reason::out_of_bounds, wr_opcode::read, wc_status::rem_access_err},
                                  reason_case{wire::nak_reason::length_error, wr_opcode::send, wc_status::rem_inv_req_err},
                                  reason_case{wire::nak_reason::invalid_request, wr_opcode::send, wc_status::rem_inv_req_err},
                                  reason_case{wire::nak_reason::remote_operation, wr_opcode::send, wc_status::rem_op_err}}) {
        x.cq.clear();
        offer o;
        o.paths = 1;
        tconn& c = x.p.connect(o);
        x.p.manual_acks(c);
        const region src = src_region(x, 4096, 16);
        x.post_send(c, req(rc.op, 2, src, 0, 64, 100));
        send_req b = req(wr_opcode::write, 2, src, 64, 64, 101);
        b.signaled = false;
        x.post_send(c, b);
        x.post_send(c, req(wr_opcode::write, 3, src, 128, 64, 102));
        const rx_pkt a = x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the first request's packet");
        x.p.send_on(c, x.p.nak_pkt(c, 0, a.v().psn, rc.reason, 2, a.v().msn), 0);
        const completion w0 = x.wait_wc(100, x.p.reply_ns());
        const completion w1 = x.wait_wc(101, x.p.reply_ns());
        const completion w2 = x.wait_wc(102, x.p.reply_ns());
        const std::string r = "NAK reason " + std::to_string(uint8_t(rc.reason)) + ": ";
        x.check(w0.status == rc.want, r + "the NAKed request completed with " + std::string(to_string(w0.status)) +
                                          ", expected " + std::string(to_string(rc.want)));
        x.check(w1.status == wc_status::wr_flush_err, r + "the later (unsignaled) request of the stream completed with " +
                                                          std::string(to_string(w1.status)) + ", expected wr_flush_err");
        x.check(w2.status == wc_status::wr_flush_err, r + "a request of another stream did not flush");
        x.check(x.find_wc(100) < x.find_wc(101), r + "completions out of stream order");
        x.check(x.t.state(c.iut_id) == conn_state::error, r + "the connection is not in ERROR");
        x.check(x.t.post_send(c.iut_id, req(wr_opcode::write, 2, src, 0, 8, 103)) == post_result::conn_not_usable,
                r + "posting in ERROR was not refused with conn_not_usable");
        x.p.close_all();
    }
}

CONFORMANCE_TEST(completions_in_stream_order, "9.1", "10.5")
{
    offer o;
    o.paths = 1;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    admit(x, c, 109);
    const region src = src_region(x, 4096, 17);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, 64, 110));
    x.post_send(c, req(wr_opcode::write, 2, src, 64, 64, 111));
    x.post_send(c, req(wr_opcode::write, 3, src, 128, 64, 112));
    const std::vector<rx_pkt> pk = new_packets(x, c, x.p.reply_ns(), 3);
    x.check(pk.size() == 3, "the 3 requests did not go out");
    const uint32_t p0 = pk[0].v().psn;
    x.check(pk[1].v().psn == p0 + 1 && pk[2].v().psn == p0 + 2, "one path: PSNs not in posting order");
    std::bitset<wire::k_sack_bits> sack;
    sack[1] = sack[2] = true;
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0, sack, pk[2].v().tx_ts, 2, 0), 0);
    x.wait_wc(112, x.p.reply_ns());
    x.check(!x.completed(111), "a request completed before an earlier one of its stream");
    x.check(!x.completed(110), "a request completed before it was acknowledged");
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + 3, {}, pk[2].v().tx_ts, 1, 0), 0);
    x.wait_wc(111, x.p.reply_ns());
    x.check(x.find_wc(110) != nullptr && x.find_wc(110) < x.find_wc(111), "stream 2 completed out of order");
}

CONFORMANCE_TEST(unsignaled_success_not_reported, "9.2")
{
    tconn& c = x.p.connect();
    const region src = src_region(x, 4096, 18);
    send_req a = req(wr_opcode::write, 2, src, 0, 64, 120);
    a.signaled = false;
    x.post_send(c, a);
    x.post_send(c, req(wr_opcode::write, 2, src, 64, 64, 121));
    x.wait_wc(121, x.p.reply_ns());
    x.p.idle(x.p.quiet_ns() / 4);
    x.check(!x.completed(120), "an unsignaled successful request produced a completion");
}

} // namespace metaroce::conformance
