// The handshake and control packets against an off-path attacker (spec 7.6-7.8):
// unpredictable ids, stateless cookies, checked CLOSE/CLOSE_ACK/PROBE_ACK, and expiry of
// connections whose peer is gone.
#include <catch2/catch.hpp>

#include <set>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

constexpr uint32_t k_attacker = 0x0a0000fe;

std::vector<uint8_t> hello_packet(wire::opcode op, uint32_t dst_conn, uint64_t nonce, uint32_t src_conn,
                                  uint64_t cookie)
{
    wire::bth_fields b;
    b.op = op;
    b.dst_conn = dst_conn;
    wire::hello_header h{};
    h.nonce = wire::be64_t::from_host(nonce);
    h.src_conn = wire::be32_t::from_host(src_conn);
    h.isn = wire::be32_t::from_host(1);
    h.paths = wire::be16_t::from_host(4);
    h.mtu = wire::be16_t::from_host(4096);
    h.max_streams = wire::be16_t::from_host(4);
    h.max_msgs = wire::be16_t::from_host(16);
    h.planes = 1;
    h.rq_depth = wire::be16_t::from_host(16);
    h.cookie = wire::be64_t::from_host(cookie);
    std::vector<uint8_t> out(128);
    out.resize(wire::build_hello(out, b, h));
    return out;
}

std::vector<uint8_t> close_packet(wire::opcode op, uint32_t dst_conn, uint32_t src_conn, uint32_t token)
{
    wire::bth_fields b;
    b.op = op;
    b.dst_conn = dst_conn;
    wire::close_header c{};
    c.src_conn = wire::be32_t::from_host(src_conn);
    c.token = wire::be32_t::from_host(token);
    std::vector<uint8_t> out(64);
    out.resize(wire::build_close(out, b, c));
    return out;
}

size_t count_op(const pair_harness& h, wire::opcode op, int to)
{
    size_t n = 0;
    for (const captured& p : h.sent) {
        n += p.to == to && is_op(p, op) ? 1 : 0;
    }
    return n;
}

} // namespace

TEST_CASE("connection ids are unpredictable and differ between nodes", "[handshake]")
{
    std::set<conn_id> first_ids;
    for (uint64_t seed = 1; seed <= 16; ++seed) {
        endpoint_config cfg;
        cfg.local_addr = pair_harness::k_addr_a;
        cfg.seed = seed;
        endpoint e(cfg);
        const conn_id c = e.connect(pair_harness::k_addr_b, 0);
        CHECK(c != 0x00010001u);
        CHECK((c & 0xffffu) == 1); // the slot stays in the low half
        first_ids.insert(c);
    }
    CHECK(first_ids.size() == 16);
}

TEST_CASE("a CONNECT without a valid cookie gets a COOKIE and leaves no state", "[handshake]")
{
    pair_harness h;
    inject_bytes(h, 1, hello_packet(wire::opcode::connect, 0, 0x1234, 0x00420001, 0), 0, k_attacker);
    inject_bytes(h, 1, hello_packet(wire::opcode::connect, 0, 0x1235, 0x00430001, 0xdeadbeefcafef00dull), 0,
                 k_attacker);
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.b().connections().empty());
    CHECK(h.b().stats().cookies_sent == 2);
    CHECK(h.b().stats().rx_bad_cookie == 1);
    CHECK(h.events[1].empty());
    REQUIRE(count_op(h, wire::opcode::cookie, 0) == 2); // sent toward the claimed source
}

TEST_CASE("70,000 spoofed CONNECTs do not fill the table; a real peer still connects", "[handshake]")
{
    transport_config t;
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.max_connections = 64;
    pair_harness h(pair_harness::config(pair_harness::k_addr_a, t, 11), cb, 1000);
    h.record = false;
    xorshift rng{99};
    for (int i = 0; i < 70000; ++i) {
        const uint32_t from = 0x0b000000u | uint32_t(rng.next() & 0xffffff);
        const uint64_t guess = (i % 2) == 0 ? 0 : rng.next();
        inject_bytes(h, 1, hello_packet(wire::opcode::connect, 0, rng.next(), uint32_t(rng.next()) | 1, guess), 0,
                     from);
        if (i % 1000 == 999) {
            h.run_until([] { return false; }, 2000);
        }
    }
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.b().connections().empty());
    const conn_id c = h.connect();
    CHECK(pair_harness::established(h.a(), c));
    CHECK(h.b().connections().size() == 1);
}

TEST_CASE("a CONNECT naming a live connection's peer id with another nonce changes nothing",
          "[handshake]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    // From the peer's own (spoofed) address, its real connection id, a new nonce, and
    // a cookie guessed or absent: the attacker never sees the COOKIE that would work.
    inject_bytes(h, 1, hello_packet(wire::opcode::connect, 0, 0x9999, c, 0));
    inject_bytes(h, 1, hello_packet(wire::opcode::connect, 0, 0x9998, c, 0x0123456789abcdefull));
    h.run_until([] { return false; }, 1'000'000);
    REQUIRE(h.b().inspect(pc).has_value());
    CHECK(h.b().inspect(pc)->state == conn_state::established);
    CHECK(h.b().connections().size() == 1);
    CHECK(h.b().stats().conn_errors == 0);
}

TEST_CASE("CLOSE and CLOSE_ACK must carry the peer's id and token", "[handshake]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    // CLOSE to b from a's address: right ids, wrong token.
    inject_bytes(h, 1, close_packet(wire::opcode::close, pc, c, 0x11111111));
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.b().inspect(pc)->state == conn_state::established);
    CHECK(h.b().stats().rx_bad_token >= 1);

    // a closes; its real CLOSE_ACK is lost and forged ones arrive instead.
    h.filter = [](const captured& p) { return is_op(p, wire::opcode::close_ack); };
    h.a().close(c, h.now());
    inject_bytes(h, 0, close_packet(wire::opcode::close_ack, c, pc ^ 0x10000, 0));
    inject_bytes(h, 0, close_packet(wire::opcode::close_ack, c, pc, 0x22222222));
    h.step();
    h.step();
    REQUIRE(h.a().inspect(c).has_value());
    CHECK(h.a().inspect(c)->state == conn_state::closing);
    CHECK(h.a().stats().rx_bad_token >= 2);
}

TEST_CASE("a PROBE_ACK with a guessed token does not revive a dead plane", "[handshake]")
{
    transport_config t;
    t.planes = 2;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    h.filter = [](const captured& p) { return p.frame.plane == 1; };
    buffer src(h.a(), 1 << 20, k_all_access, 5);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    REQUIRE_FALSE(h.a().planes()[1].detected_up);
    // Guesses at the prober's token, on plane 1, from the peer's address.
    for (uint32_t guess : {c, 0u, 1u, 0xffffffffu, h.peer_conn()}) {
        wire::bth_fields b;
        b.op = wire::opcode::probe_ack;
        b.dst_conn = c;
        wire::probe_header ph{};
        ph.token = wire::be32_t::from_host(guess);
        std::vector<uint8_t> out(64);
        out.resize(wire::build_probe(out, b, ph));
        inject_bytes(h, 0, out, 1);
    }
    h.step();
    CHECK_FALSE(h.a().planes()[1].detected_up);
    CHECK(h.a().stats().plane_ups == 0);
    CHECK(h.a().stats().rx_bad_token >= 5);
}

TEST_CASE("a PROBE naming no connection of its sender gets no answer", "[handshake]")
{
    pair_harness h;
    h.connect();
    wire::bth_fields b;
    b.op = wire::opcode::probe;
    b.dst_conn = 0x12340001;
    wire::probe_header ph{};
    std::vector<uint8_t> out(64);
    out.resize(wire::build_probe(out, b, ph));
    h.sent.clear();
    inject_bytes(h, 1, out, 0, k_attacker);
    h.run_until([] { return false; }, 1'000'000);
    CHECK(count_op(h, wire::opcode::probe_ack, 0) == 0);
}

TEST_CASE("an idle connection whose peer vanished fails, then is freed", "[handshake][liveness]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    const transport_config t;
    h.filter = [](const captured&) { return true; }; // the fabric between them died
    REQUIRE(h.run_until([&] { return h.a().inspect(c)->state == conn_state::error; },
                        t.idle_timeout_ns + t.keepalive_ns * 2));
    CHECK(h.a().stats().conns_expired == 1);
    CHECK(h.a().stats().keepalives > 0);
    REQUIRE(h.run_until([&] { return h.a().connections().empty(); }, t.error_linger_ns * 2));
    CHECK(h.a().stats().conns_reaped == 1);
    CHECK(h.events[0].back().what == conn_event::kind::closed);
    (void)pc;
}

TEST_CASE("an idle connection whose peer is alive stays up", "[handshake][liveness]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    h.run_until([] { return false; }, 3 * transport_config{}.idle_timeout_ns);
    CHECK(h.a().inspect(c)->state == conn_state::established);
    CHECK(h.b().inspect(pc)->state == conn_state::established);
    CHECK(h.a().stats().keepalives > 0);
    CHECK(h.a().stats().conns_expired == 0);
}
