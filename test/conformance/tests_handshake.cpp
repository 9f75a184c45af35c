// Connection lifecycle on the wire: the COOKIE handshake, negotiation, control
// retransmission, close, stateless replies, probes and liveness (spec 3.8-3.10, 3.13, 7).
#include <set>

#include "helpers.hpp"
#include "metaroce/config.hpp"

namespace metaroce::conformance {

namespace {

// One connection attempt of the tester, built by hand.
struct attempt {
    hello_fields h;
    uint32_t addr = k_tester_addr;
    uint16_t sport = 50505;
};

attempt new_attempt(tester& p, const offer& o = {})
{
    attempt a;
    a.h.nonce = p.new_nonce();
    a.h.src_conn = p.new_conn_id();
    a.h.isn = uint32_t(p.new_nonce());
    a.h.paths = o.paths;
    a.h.mtu = o.mtu;
    a.h.max_streams = o.max_streams;
    a.h.max_msgs = o.max_msgs;
    a.h.planes = o.planes;
    return a;
}

void send_connect(tester& p, const attempt& a)
{
    p.send(p.hello_pkt(wire::opcode::connect, 0, a.h), {a.addr, 0, a.sport, false});
}

pkt_pred op_to(wire::opcode op, uint32_t dst_conn)
{
    return [op, dst_conn](const rx_pkt& k) { return k.is(op) && k.v().dst_conn == dst_conn; };
}

// CONNECT without a cookie; returns the COOKIE's value.
uint64_t get_cookie(ctx& x, const attempt& a)
{
    attempt no = a;
    no.h.cookie = 0;
    send_connect(x.p, no);
    const rx_pkt ck = x.p.must(op_to(wire::opcode::cookie, a.h.src_conn), x.p.reply_ns(), "COOKIE for a CONNECT");
    return ck.v().cookie->cookie.host();
}

bool no_accept(ctx& x, const attempt& a)
{
    return x.p.quiet(op_to(wire::opcode::accept, a.h.src_conn), x.p.quiet_ns());
}

// Sends the CONNECT and checks it is answered with a COOKIE and nothing else.
void refused_with_cookie(ctx& x, const attempt& a, const std::string& what)
{
    send_connect(x.p, a);
    const uint32_t id = a.h.src_conn;
    const auto got = x.p.collect([id](const rx_pkt& k) { return k.ok() && k.v().dst_conn == id; }, x.p.quiet_ns());
    bool cookie = false;
    for (const rx_pkt& k : got) {
        x.check(!k.is(wire::opcode::accept), "a CONNECT with " + what + " was accepted");
        cookie = cookie || k.is(wire::opcode::cookie);
    }
    x.check(cookie, "no fresh COOKIE for a CONNECT with " + what);
}

// Frees what an attempt created on the IUT.
void close_attempt(ctx& x, const attempt& a, const rx_pkt& accept)
{
    x.p.send(x.p.close_pkt(wire::opcode::close, decode_hello(*accept.v().hello).src_conn, a.h.src_conn,
                           uint32_t(a.h.nonce)),
             {a.addr, 0, a.sport, false});
    x.p.expect(op_to(wire::opcode::close_ack, a.h.src_conn), x.p.reply_ns());
}

} // namespace

CONFORMANCE_TEST(connect_gets_cookie_then_accept, "7.7", "7.2", "3.13", "7.6", "3.8", "10.1")
{
    attempt a = new_attempt(x.p);
    const auto sent = x.mark("cookies_sent");
    const std::vector<uint8_t> connect = x.p.hello_pkt(wire::opcode::connect, 0, a.h);
    x.p.send(connect, {a.addr, 0, a.sport, false});
    const rx_pkt ck = x.p.must(op_to(wire::opcode::cookie, a.h.src_conn), x.p.reply_ns(), "COOKIE for a CONNECT without one");
    x.check(ck.len() == 20 + 24, "COOKIE of " + std::to_string(ck.len()) + " bytes, not 44");
    const uint32_t connect_ts = uint32_t(connect[16] << 24 | connect[17] << 16 | connect[18] << 8 | connect[19]);
    x.check(ck.v().cookie->ts_echo.host() == connect_ts, "COOKIE ts_echo is not the CONNECT's tx_ts");
    x.check(ck.v().cookie->nonce.host() == a.h.nonce, "COOKIE does not echo the CONNECT's nonce");
    x.check(ck.v().cookie->cookie.host() != 0, "COOKIE with cookie 0");
    x.check(ck.d->udp_sport == a.sport && ck.d->dst_addr == a.addr,
            "COOKIE not sent back to the CONNECT's address and UDP source port");
    x.check(no_accept(x, a), "an ACCEPT for a CONNECT without a cookie (state was created)");
    // Again without a cookie: another COOKIE, still no ACCEPT.
    send_connect(x.p, a);
    x.p.must(op_to(wire::opcode::cookie, a.h.src_conn), x.p.reply_ns(), "COOKIE for a repeated CONNECT without one");
    x.check(no_accept(x, a), "an ACCEPT for a repeated CONNECT without a cookie");
    x.check_counted(sent, 2);
    a.h.cookie = ck.v().cookie->cookie.host();
    send_connect(x.p, a);
    const rx_pkt acc = x.p.must(op_to(wire::opcode::accept, a.h.src_conn), x.p.reply_ns(),
                                "ACCEPT for the CONNECT echoing the cookie");
    const hello_fields h = decode_hello(*acc.v().hello);
    x.check(acc.len() == 20 + 40, "ACCEPT of " + std::to_string(acc.len()) + " bytes, not 60");
    x.check(h.nonce == a.h.nonce, "ACCEPT does not echo the nonce");
    x.check(h.src_conn != 0, "ACCEPT with src_conn 0");
    x.check(h.cookie == 0, "ACCEPT with a cookie");
    x.check(acc.v().psn == 0, "ACCEPT with a non-zero BTH psn");
    close_attempt(x, a, acc);
}

CONFORMANCE_TEST(accept_negotiates_minimum, "7.2", "3.8")
{
    offer small;
    small.paths = 3;
    small.mtu = 256;
    small.max_streams = 5;
    small.max_msgs = 7;
    tconn& c = x.p.connect(small);
    const hello_fields& a = c.accept;
    x.check(a.paths == 3 && a.mtu == 256 && a.max_streams == 5 && a.max_msgs == 7 && a.planes == 1,
            "ACCEPT does not carry the minimum of a small offer (paths " + std::to_string(a.paths) + ", mtu " +
                std::to_string(a.mtu) + ", streams " + std::to_string(a.max_streams) + ", msgs " +
                std::to_string(a.max_msgs) + ")");
    // The IUT then sends within what was agreed.
    const region src = x.mr(4096, access::local_write);
    send_req s;
    s.op = wr_opcode::write;
    s.stream = 4;
    s.local = src;
    s.length = 2000;
    s.remote_va = 0x1000;
    s.rkey = 7;
    s.wr_id = 1;
    x.post_send(c, s);
    size_t bytes = 0;
    while (bytes < 2000) {
        const rx_pkt p = x.p.must(tester::data_for(c, 4), x.p.reply_ns(), "the WRITE's packets");
        x.check(p.v().payload.size() <= 256, "a packet over the agreed mtu");
        x.check(p.v().path < 3, "a packet on a path beyond the agreed count");
        bytes += (p.v().flags & wire::bth_flag::retx) ? 0 : p.v().payload.size();
    }
    x.p.close_all();
    offer big;
    big.paths = 256;
    big.mtu = 9000;
    big.max_streams = 1000;
    big.max_msgs = 4096;
    big.planes = 8;
    tconn& d = x.p.connect(big);
    const hello_fields& b = d.accept;
    x.check(b.paths <= 256 && b.mtu <= 9000 && b.max_streams <= 1000 && b.max_msgs <= 4096 && b.planes <= 8,
            "ACCEPT agrees to more than the CONNECT offered");
    x.check(b.paths >= 1 && b.mtu >= 64 && b.max_streams >= 1 && b.max_msgs >= 1 && b.planes >= 1,
            "ACCEPT with a field out of range");
}

CONFORMANCE_TEST(hello_out_of_range_refused, "7.2", "3.8")
{
    struct bad {
        const char* what;
        void (*apply)(hello_fields&);
    };
    const bad cases[] = {
        {"paths 0", [](hello_fields& h) { h.paths = 0; }},      {"paths 257", [](hello_fields& h) { h.paths = 257; }},
        {"mtu 63", [](hello_fields& h) { h.mtu = 63; }},         {"max_streams 0", [](hello_fields& h) { h.max_streams = 0; }},
        {"max_msgs 0", [](hello_fields& h) { h.max_msgs = 0; }}, {"planes 0", [](hello_fields& h) { h.planes = 0; }},
    };
    for (const bad& b : cases) {
        attempt a = new_attempt(x.p);
        b.apply(a.h);
        send_connect(x.p, a);
        // A COOKIE may come first (the cookie is checked before the fields); then the
        // CONNECT with the cookie must still be refused.
        const auto ck = x.p.expect(op_to(wire::opcode::cookie, a.h.src_conn), x.p.quiet_ns());
        if (ck) {
            a.h.cookie = ck->v().cookie->cookie.host();
            send_connect(x.p, a);
        }
        x.check(no_accept(x, a), std::string("a CONNECT with ") + b.what + " was accepted");
    }
}

CONFORMANCE_TEST(invalid_cookie_refused, "7.7")
{
    attempt a = new_attempt(x.p);
    const uint64_t cookie = get_cookie(x, a);
    const auto bad_cookie = x.mark("rx_bad_cookie");
    struct variant {
        const char* what;
        attempt at;
    };
    std::vector<variant> vs;
    attempt v = a;
    v.h.cookie = cookie ^ 1;
    vs.push_back({"a wrong cookie value", v});
    v = a;
    v.h.cookie = cookie;
    v.h.nonce ^= 0x100;
    vs.push_back({"the cookie of another nonce", v});
    v = a;
    v.h.cookie = cookie;
    v.h.src_conn = x.p.new_conn_id();
    vs.push_back({"the cookie of another src_conn", v});
    v = a;
    v.h.cookie = cookie;
    v.addr = k_other_addr;
    vs.push_back({"the cookie of another address", v});
    for (const variant& w : vs) {
        refused_with_cookie(x, w.at, w.what);
    }
    x.check_counted(bad_cookie, 4);
    a.h.cookie = cookie;
    send_connect(x.p, a);
    const rx_pkt acc = x.p.must(op_to(wire::opcode::accept, a.h.src_conn), x.p.reply_ns(), "ACCEPT with the right cookie");
    close_attempt(x, a, acc);
}

CONFORMANCE_TEST(cookie_lifetime, "7.7")
{
    x.need_virtual_time();
    // Valid in its time bucket (2^30 ns) and the next: still good after 1 s, never after 2.15 s.
    attempt a = new_attempt(x.p);
    a.h.cookie = get_cookie(x, a);
    x.p.idle(1'000'000'000);
    send_connect(x.p, a);
    const rx_pkt acc = x.p.must(op_to(wire::opcode::accept, a.h.src_conn), x.p.reply_ns(), "ACCEPT for a 1 s old cookie");
    close_attempt(x, a, acc);
    attempt b = new_attempt(x.p);
    b.h.cookie = get_cookie(x, b);
    x.p.idle(2'150'000'000);
    refused_with_cookie(x, b, "a cookie 2.15 s old");
}

CONFORMANCE_TEST(duplicate_connect_gets_same_accept, "7.3")
{
    attempt a = new_attempt(x.p);
    a.h.cookie = get_cookie(x, a);
    send_connect(x.p, a);
    const rx_pkt first = x.p.must(op_to(wire::opcode::accept, a.h.src_conn), x.p.reply_ns(), "ACCEPT");
    send_connect(x.p, a); // our ACCEPT was "lost": the same CONNECT again
    const rx_pkt again = x.p.must(op_to(wire::opcode::accept, a.h.src_conn), x.p.reply_ns(), "ACCEPT again");
    const hello_fields h1 = decode_hello(*first.v().hello), h2 = decode_hello(*again.v().hello);
    x.check(h1.src_conn == h2.src_conn && h1.isn == h2.isn && h1.nonce == h2.nonce,
            "the repeated CONNECT created another connection instead of repeating the ACCEPT");
    close_attempt(x, a, again);
}

CONFORMANCE_TEST(restarted_peer_replaces_connection, "7.3", "7.5")
{
    tconn& old = x.p.connect();
    const uint32_t id = old.id;
    const uint32_t old_iut = old.iut_id;
    const region buf = x.mr(256, access::local_write);
    x.post_recv(old, 2, buf, 0, 64, 200);
    old.open = false; // the tester "restarts": that connection is forgotten
    x.p.conns.erase(id);
    offer o;
    o.id = id; // same src_conn, new nonce
    tconn& fresh = x.p.connect(o);
    x.check(fresh.iut_id != old_iut, "the new attempt was given the stale connection");
    const completion w = x.wait_wc(200, x.p.reply_ns());
    x.check(w.status == wc_status::wr_flush_err, "the stale connection's receive completed with " +
                                                     std::string(to_string(w.status)) + ", expected wr_flush_err");
    const auto st = x.t.state(old_iut);
    x.check(!st || *st == conn_state::error || *st == conn_state::closed, "the stale connection is still usable");
}

CONFORMANCE_TEST(iut_connect_retries_with_backoff, "7.3", "7.1", "10.1")
{
    const conn_id id = x.t.connect(k_tester_addr);
    x.check(id != k_no_conn, "the IUT could not start a connection");
    // Each try goes with its copies at once (7.3, at most 4), the same packet with the
    // same timestamp: a try is a run of CONNECTs with one tx_ts.
    std::vector<rx_pkt> connects;
    std::vector<size_t> attempt_start; // index into connects
    const auto take = [&](const rx_pkt& k) {
        if (connects.empty() || k.v().tx_ts != connects.back().v().tx_ts) {
            attempt_start.push_back(connects.size());
        }
        connects.push_back(k);
    };
    const auto is_connect = [](const rx_pkt& p) { return p.is(wire::opcode::connect); };
    const uint64_t window = x.exact() ? 400'000'000 : 2'000'000'000;
    const uint64_t deadline = x.t.now_ns() + window;
    while (x.t.now_ns() < deadline && connects.size() < 4 * 21) {
        auto k = x.p.expect(is_connect, deadline - x.t.now_ns());
        if (!k) {
            break;
        }
        take(*k);
        if (attempt_start.size() == 21) {
            break;
        }
    }
    while (auto k = x.p.expect(is_connect, x.p.quiet_ns())) {
        take(*k); // the last try's copies, sent with it
    }
    // The last retry's timer (64 x 200 us) runs out, then ERROR (and, 1 s later, freed).
    x.wait_state(id, [](std::optional<conn_state> s) { return !s || *s == conn_state::error; },
                 x.exact() ? 20'000'000 : 200'000'000);
    x.check(x.p.quiet(is_connect, x.p.quiet_ns()), "more than 1 + 20 CONNECT tries");
    x.check(attempt_start.size() == 21, std::to_string(attempt_start.size()) + " CONNECT tries, expected 1 + 20 retries");
    const auto copies_of = [&](size_t i) {
        return (i + 1 < attempt_start.size() ? attempt_start[i + 1] : connects.size()) - attempt_start[i];
    };
    for (size_t i = 0; i < attempt_start.size(); ++i) {
        x.check(copies_of(i) >= 1 && copies_of(i) <= 4 && copies_of(i) == copies_of(0),
                "try " + std::to_string(i) + " went " + std::to_string(copies_of(i)) + " times, the first " +
                    std::to_string(copies_of(0)));
    }
    for (const rx_pkt& k : connects) {
        const hello_fields h = decode_hello(*k.v().hello);
        x.check(h.cookie == 0 && h.nonce == decode_hello(*connects[0].v().hello).nonce && k.v().dst_conn == 0,
                "a retried CONNECT changed its nonce, or carries a cookie it never got, or a dst_conn");
    }
    const auto st = x.t.state(id);
    x.check(st && *st == conn_state::error, "the connection is not in ERROR after the last retry");
    if (x.exact()) {
        for (size_t i = 1; i < attempt_start.size(); ++i) {
            // Three retries at connect_retry, then doubling up to 64x.
            const uint64_t want = uint64_t(200'000) << std::min<size_t>(i > 4 ? i - 4 : 0, 6);
            const uint64_t dt = connects[attempt_start[i]].d->at_ns - connects[attempt_start[i - 1]].d->at_ns;
            x.check(dt == want, "retry " + std::to_string(i) + " after " + std::to_string(dt / 1000) +
                                    " us, expected " + std::to_string(want / 1000) +
                                    " us (3 retries at 200 us, then doubling up to 64x)");
        }
    }
}

CONFORMANCE_TEST(iut_initiator_echoes_cookie_and_takes_minimum, "7.7", "7.3", "7.2")
{
    const conn_id id = x.t.connect(k_tester_addr);
    offer o;
    o.paths = 2;
    o.mtu = 256;
    tconn& c = x.p.accept(o); // checks that the second CONNECT echoes our cookie at once
    x.check(c.iut_id == id, "the CONNECT's src_conn is not the id the IUT's application got");
    x.check(x.wait_state(id, [](std::optional<conn_state> s) { return s == conn_state::established; },
                         x.p.reply_ns()),
            "the IUT did not reach ESTABLISHED on our ACCEPT");
    const region src = x.mr(4096, access::local_write);
    send_req s;
    s.op = wr_opcode::write;
    s.stream = 4;
    s.local = src;
    s.length = 1500;
    s.remote_va = 0x1000;
    s.rkey = 7;
    s.wr_id = 2;
    x.post_send(c, s);
    size_t bytes = 0;
    while (bytes < 1500) {
        const rx_pkt p = x.p.must(tester::data_for(c, 4), x.p.reply_ns(), "the WRITE's packets");
        x.check(p.v().payload.size() <= 256 && p.v().path < 2, "the initiator did not take the minimum of the ACCEPT");
        bytes += (p.v().flags & wire::bth_flag::retx) ? 0 : p.v().payload.size();
    }
}

CONFORMANCE_TEST(iut_initiator_ignores_foreign_cookie, "7.7")
{
    const conn_id id = x.t.connect(k_tester_addr);
    const rx_pkt first = x.p.must([](const rx_pkt& p) { return p.is(wire::opcode::connect); }, x.p.reply_ns(), "CONNECT");
    const hello_fields h = decode_hello(*first.v().hello);
    x.check(h.src_conn == id, "CONNECT src_conn is not the connection's id");
    // Counted rx_bad_cookie (spec 7.7), or rx_wrong_peer for the other address (3.12).
    const auto bad = x.mark("rx_bad_cookie");
    const auto wrong = x.mark("rx_wrong_peer");
    struct variant {
        const char* what;
        uint64_t nonce;
        uint32_t addr;
    };
    for (const variant& v : {variant{"another nonce", h.nonce ^ 1, k_tester_addr},
                             variant{"another address", h.nonce, k_other_addr}}) {
        std::vector<uint8_t> ck = x.p.bth_only({wire::opcode::cookie, 0, h.src_conn, 0, 0, 0, x.p.now32()},
                                               sizeof(wire::cookie_header));
        poke32(ck, 20, uint32_t(v.nonce >> 32));
        poke32(ck, 24, uint32_t(v.nonce));
        poke32(ck, 28, 0x0bad0bad);
        poke32(ck, 32, 0x0bad0bad);
        x.p.send(ck, {v.addr, first.d->plane, first.d->udp_sport, false});
        const auto echoed = x.p.collect(
            [](const rx_pkt& p) { return p.is(wire::opcode::connect) && decode_hello(*p.v().hello).cookie != 0; },
            x.exact() ? 100'000 : x.p.quiet_ns());
        x.check(echoed.empty(), std::string("the initiator took a COOKIE with ") + v.what);
    }
    x.check_counted(bad);
    x.check_counted(wrong);
    x.t.close(id);
}

CONFORMANCE_TEST(data_before_accept_dropped, "7.3")
{
    const region r = x.rw_mr(4096);
    x.t.connect(k_tester_addr);
    const tester::incoming in = x.p.wait_connect();
    // Data for the initiator before it saw ACCEPT, built for the connection to come.
    const uint32_t isn = 0x1234;
    wire::bth_fields b{wire::opcode::write, wire::bth_flag::last | wire::bth_flag::ack_req, in.hello.src_conn,
                       isn, 0, 0, x.p.now32()};
    wire::msg_fields f;
    f.stream = 2;
    f.msg_len = 32;
    f.va = r.va;
    f.rkey = r.rkey;
    const std::vector<uint8_t> pkt = x.p.data_pkt(b, f, pattern(32, 1));
    x.p.send(pkt, {k_tester_addr, 0, 50000, false});
    const auto early = x.p.collect(
        [&](const rx_pkt& p) { return (p.is(wire::opcode::ack) || p.is(wire::opcode::nak)); }, x.p.quiet_ns());
    x.check(early.empty(), "data before ACCEPT was answered (" + describe(early) + ")");
    x.check(all_zero(x.mem(r, 0, 32)), "data before ACCEPT was placed");
    offer o;
    o.isn = isn;
    tconn& c = x.p.send_accept(in, o);
    x.p.send_on(c, pkt, 0);
    const rx_pkt a = expect_ack(x, c, 0, isn + 1, "for the data resent after ACCEPT");
    x.check(a.v().ack->rx_pkts.host() == 1, "the early data took the PSN");
    x.check(x.mem(r, 0, 32) == pattern(32, 1), "the data resent after ACCEPT did not land");
}

CONFORMANCE_TEST(connection_ids_never_zero_nor_reused, "7.1", "10.1")
{
    std::set<uint32_t> ids;
    std::map<uint16_t, uint16_t> gen_of_slot;
    for (int i = 0; i < 6; ++i) {
        tconn& c = x.p.connect();
        const uint32_t id = c.iut_id;
        x.check(id != 0 && (id & 0xffff) != 0 && (id >> 16) != 0, "connection id " + std::to_string(id) +
                                                                      " has a zero half");
        x.check(ids.insert(id).second, "a connection id came back after its connection was closed");
        if (auto it = gen_of_slot.find(uint16_t(id)); it != gen_of_slot.end()) {
            x.check(it->second != uint16_t(id >> 16), "a reused slot kept its previous high bits");
        }
        gen_of_slot[uint16_t(id)] = uint16_t(id >> 16);
        x.p.close(c);
    }
}

CONFORMANCE_TEST(close_from_peer_frees_and_flushes, "7.4", "3.9", "7.6", "10.1")
{
    tconn& c = x.p.connect();
    const region buf = x.mr(256, access::local_write);
    const region r = x.rw_mr(256);
    x.post_recv(c, 2, buf, 0, 64, 300);
    x.p.send(x.p.close_pkt(wire::opcode::close, c.iut_id, c.id, c.token()), {c.addr, 0, 51000, false});
    c.open = false;
    const rx_pkt ack = x.p.must(tester::op_for(c, wire::opcode::close_ack), x.p.reply_ns(), "CLOSE_ACK");
    x.check(ack.v().close->src_conn.host() == c.iut_id, "CLOSE_ACK src_conn is not the closed connection's id");
    x.check(ack.v().close->token.host() == c.token(), "CLOSE_ACK does not echo the token");
    x.check(ack.d->udp_sport == 51000, "CLOSE_ACK not sent from the UDP port the CLOSE arrived on");
    const completion w = x.wait_wc(300, x.p.reply_ns());
    x.check(w.status == wc_status::wr_flush_err, "the posted receive did not flush on CLOSE");
    const auto st = x.t.state(c.iut_id);
    x.check(!st || *st == conn_state::closed, "the connection survived the CLOSE");
    // Data for it is now for no connection.
    x.p.send_on(c, write_msg(x.p, c, r, 0, pattern(16, 1)).pkts[0].bytes, 0);
    x.check(x.p.quiet(tester::reply_for(c), x.p.quiet_ns()), "data for a closed connection was answered");
}

CONFORMANCE_TEST(close_for_unknown_connection_acked, "7.4", "7.6")
{
    const uint32_t src = x.p.new_conn_id();
    x.p.send(x.p.close_pkt(wire::opcode::close, 0x7777u, src, 0xabcdef01u), {k_tester_addr, 0, 52345, false});
    const rx_pkt ack = x.p.must(op_to(wire::opcode::close_ack, src), x.p.reply_ns(), "CLOSE_ACK for a CLOSE naming no connection");
    x.check(ack.d->udp_sport == 52345 && ack.d->dst_addr == k_tester_addr,
            "CLOSE_ACK not sent back to the CLOSE's address and UDP source port");
    x.check(ack.v().close->token.host() == 0xabcdef01u, "CLOSE_ACK does not echo the token");
}

CONFORMANCE_TEST(close_with_wrong_token_ignored, "7.4", "3.9")
{
    tconn& c = x.p.connect();
    const region r = x.rw_mr(256);
    const auto mark = x.mark("rx_bad_token");
    x.p.send_on(c, x.p.close_pkt(wire::opcode::close, c.iut_id, c.id, c.token() ^ 0x1000u), 0);
    x.p.send_on(c, x.p.close_pkt(wire::opcode::close, c.iut_id, c.id ^ 0x10u, c.token()), 0);
    x.p.idle(x.p.quiet_ns() / 4);
    x.check_counted(mark, 2);
    x.check(x.t.state(c.iut_id) == conn_state::established, "a CLOSE with a wrong token or src_conn closed the connection");
    const sent_msg s = write_msg(x.p, c, r, 0, pattern(16, 2));
    x.p.send_pkt(c, s.pkts[0]);
    expect_ack(x, c, 0, s.pkts[0].psn + 1, "for data after the bogus CLOSEs");
}

CONFORMANCE_TEST(close_by_iut_flushes_and_waits_for_token, "7.4", "3.9", "10.1")
{
    tconn& c = x.p.connect();
    x.p.manual_acks(c);
    c.auto_control = false;
    const region src = x.mr(4096, access::local_write);
    send_req s;
    s.op = wr_opcode::write;
    s.stream = 2;
    s.local = src;
    s.length = 64;
    s.remote_va = 0x1000;
    s.rkey = 7;
    s.wr_id = 310;
    x.post_send(c, s);
    x.p.must(tester::data_for(c, 2), x.p.reply_ns(), "the WRITE");
    x.t.close(c.iut_id);
    const completion w = x.wait_wc(310, x.p.reply_ns());
    x.check(w.status == wc_status::wr_flush_err, "close() completed an outstanding request with " +
                                                     std::string(to_string(w.status)));
    const rx_pkt cl = x.p.must(tester::op_for(c, wire::opcode::close), x.p.reply_ns(), "CLOSE");
    x.check(cl.v().close->src_conn.host() == c.iut_id && cl.v().close->token.host() == c.token(),
            "CLOSE does not carry the connection's id and token");
    // A CLOSE_ACK with a wrong token does not free it: CLOSE comes again.
    x.p.send_on(c, x.p.close_pkt(wire::opcode::close_ack, c.iut_id, c.id, c.token() ^ 1u), 0);
    const rx_pkt again = x.p.must(tester::op_for(c, wire::opcode::close), 20 * x.p.reply_ns(), "CLOSE resent");
    if (x.exact()) {
        x.check(again.d->at_ns - cl.d->at_ns == 200'000, "CLOSE resent after " +
                                                              std::to_string((again.d->at_ns - cl.d->at_ns) / 1000) +
                                                              " us, expected connect_retry (200 us)");
    }
    x.p.send_on(c, x.p.close_pkt(wire::opcode::close_ack, c.iut_id, c.id, c.token()), 0);
    c.open = false;
    x.check(x.wait_state(c.iut_id, [](std::optional<conn_state> st) { return !st || *st == conn_state::closed; },
                         x.p.reply_ns()),
            "the connection was not freed by a correct CLOSE_ACK");
}

CONFORMANCE_TEST(close_retries_bounded, "7.4")
{
    tconn& c = x.p.connect();
    c.auto_control = false;
    x.t.close(c.iut_id);
    size_t closes = 0;
    const uint64_t deadline = x.t.now_ns() + (x.exact() ? 400'000'000 : 2'000'000'000);
    while (x.t.now_ns() < deadline && closes < 30) {
        if (!x.p.expect(tester::op_for(c, wire::opcode::close), deadline - x.t.now_ns())) {
            break;
        }
        ++closes;
        if (!x.t.state(c.iut_id)) {
            break;
        }
    }
    c.open = false;
    x.check(closes == 21, std::to_string(closes) + " CLOSEs without an answer, expected 1 + 20 retries");
    x.check(x.wait_state(c.iut_id, [](std::optional<conn_state> st) { return !st || *st == conn_state::closed; },
                         x.p.reply_ns()),
            "the connection was not freed after its last CLOSE");
}

CONFORMANCE_TEST(probe_answered_for_live_connection, "3.10", "7.6", "7.8")
{
    tconn& c = x.p.connect();
    const auto ts_of = [](const std::vector<uint8_t>& b) {
        return uint32_t(b[16] << 24 | b[17] << 16 | b[18] << 8 | b[19]);
    };
    const std::vector<uint8_t> probe = x.p.probe_pkt(wire::opcode::probe, c.iut_id, 3, 0xfeedf00du, 0);
    x.p.send(probe, {c.addr, 0, 53333, false});
    const rx_pkt a = x.p.must(tester::op_for(c, wire::opcode::probe_ack), x.p.reply_ns(), "PROBE_ACK");
    x.check(a.v().probe->token.host() == 0xfeedf00du, "PROBE_ACK does not echo the token");
    x.check(a.v().probe->ts_echo.host() == ts_of(probe), "PROBE_ACK ts_echo is not the PROBE's tx_ts");
    x.check(a.v().path == 3, "PROBE_ACK does not echo the path");
    x.check(a.d->udp_sport == 53333 && a.d->plane == 0, "PROBE_ACK not sent back on the PROBE's plane and UDP port");
}

CONFORMANCE_TEST(probe_naming_no_connection_unanswered, "3.10", "7.6")
{
    tconn& c = x.p.connect();
    const auto unknown = x.mark("rx_unknown_conn");
    const auto wrong = x.mark("rx_wrong_peer");
    x.p.send(x.p.probe_pkt(wire::opcode::probe, c.iut_id ^ 0x00ff0000u, 0, 1, 0), {c.addr, 0, 53334, false});
    x.p.send(x.p.probe_pkt(wire::opcode::probe, c.iut_id, 0, 2, 0), {k_other_addr, 0, 53335, false});
    const auto got = x.p.collect([](const rx_pkt& p) { return p.is(wire::opcode::probe_ack); }, x.p.quiet_ns());
    x.check(got.empty(), "a PROBE naming no connection of its sender was answered");
    x.check_counted(unknown);
    x.check_counted(wrong);
}

CONFORMANCE_TEST(keepalive_probes_a_quiet_peer, "7.8", "3.10")
{
    // The defaults of spec 11, as the implementation under test runs with them.
    const uint64_t keepalive = metaroce::transport_config{}.keepalive_ns;
    tconn& c = x.p.connect();
    const uint64_t t0 = x.t.now_ns();
    const rx_pkt k = x.p.must(tester::op_for(c, wire::opcode::probe), x.exact() ? keepalive * 3 / 2 : keepalive * 4,
                              "a keepalive PROBE on an idle connection");
    if (x.exact()) {
        const uint64_t dt = k.d->at_ns - t0;
        x.check(dt >= keepalive * 99 / 100 && dt <= keepalive * 101 / 100,
                "keepalive after " + std::to_string(dt / 1000) + " us of silence, expected " +
                    std::to_string(keepalive / 1000) + " us");
    }
    x.check(k.v().path < c.paths, "keepalive on a path the connection does not have");
    // Answered (by the tester), the connection stays and no second probe comes at once.
    const auto more = x.p.collect(tester::op_for(c, wire::opcode::probe), x.exact() ? keepalive / 2 : x.p.quiet_ns());
    x.check(more.empty(), "another keepalive less than keepalive after an answered one");
    x.check(x.t.state(c.iut_id) == conn_state::established, "an answered keepalive did not keep the connection");
}

CONFORMANCE_TEST(silent_peer_expires_then_reaped, "7.8", "7.1", "10.1")
{
    const metaroce::transport_config d{};
    tconn& c = x.p.connect();
    c.auto_control = false; // keepalives go unanswered
    const region buf = x.mr(256, access::local_write);
    x.post_recv(c, 2, buf, 0, 64, 400);
    const uint64_t t0 = x.t.now_ns();
    const completion w = x.wait_wc(400, d.idle_timeout_ns * 3 / 2);
    x.check(w.status == wc_status::wr_flush_err, "the expired connection's receive completed with " +
                                                     std::string(to_string(w.status)));
    if (x.exact()) {
        const uint64_t dt = x.t.now_ns() - t0;
        // t0 is a little after the last packet the IUT heard (the handshake).
        x.check(dt >= d.idle_timeout_ns - 2'000'000 && dt <= d.idle_timeout_ns + d.keepalive_ns / 10,
                "the connection failed after " + std::to_string(dt / 1000) + " us of silence, expected " +
                    std::to_string(d.idle_timeout_ns / 1000) + " us");
    }
    x.check(x.t.state(c.iut_id) == conn_state::error, "a silent connection did not go to ERROR");
    x.check(x.wait_state(c.iut_id, [](std::optional<conn_state> s) { return !s || *s == conn_state::closed; },
                         d.error_linger_ns * 3 / 2),
            "a connection left in ERROR was not freed after error_linger");
    c.open = false;
}

CONFORMANCE_TEST(node_randomness_differs_per_start, "7.9")
{
    // Two starts of the node: their first connections must not share the id and ISN a
    // fixed seed would give them.
    struct first {
        uint32_t id, isn;
    };
    std::vector<first> lives;
    for (int life = 0; life < 2; ++life) {
        if (!x.t.restart_node()) {
            x.na("the target cannot restart its node (the core target uses fixed seeds, as spec 7.9 allows tests)");
        }
        tconn& c = x.p.connect();
        lives.push_back({c.iut_id, c.iut_isn});
        x.p.close(c);
    }
    x.check(lives[0].id != lives[1].id || lives[0].isn != lives[1].isn,
            "two starts of the node gave their first connection the same id and ISN: the random source is not "
            "seeded from the operating system");
}

} // namespace metaroce::conformance
