// Wire codec: header sizes, round trips of every opcode, byte layout, every reject
// reason of parse(), and random/mutated input against parse() and a live endpoint.
#include <catch2/catch.hpp>

#include <array>
#include <vector>

#include "metaroce/wire/codec.hpp"
#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;
using namespace metaroce::wire;

namespace {

constexpr opcode k_data_ops[] = {opcode::write,    opcode::write_imm, opcode::send,
                                 opcode::send_imm, opcode::read_req,  opcode::read_resp};
constexpr opcode k_fixed_ops[] = {opcode::ack,       opcode::nak,   opcode::connect,
                                  opcode::accept,    opcode::close, opcode::close_ack,
                                  opcode::probe,     opcode::probe_ack, opcode::cookie};

bth_fields sample_bth(opcode op)
{
    bth_fields b;
    b.op = op;
    b.flags = bth_flag::last | bth_flag::retx;
    b.dst_conn = 0x01020304;
    b.psn = 0xfffffffe;
    b.path = 200;
    b.plane = 3;
    b.tx_ts = 0xa1b2c3d4;
    return b;
}

msg_fields sample_msg()
{
    msg_fields m;
    m.stream = 0x0102;
    m.msn = 0x11223344;
    m.ssn = 0x55667788;
    m.recv_seq = 0x99aabbcc;
    m.msg_len = 1000;
    m.offset = 990;
    m.va = 0x0102030405060708ull;
    m.rkey = 0xdeadbeef;
    m.imm = 0xcafef00d;
    m.read_hint_mbps = 0x00c0ffee;
    return m;
}

void check_bth(const packet_view& v, const bth_fields& b)
{
    CHECK(v.op == b.op);
    CHECK(v.flags == b.flags);
    CHECK(v.dst_conn == b.dst_conn);
    CHECK(v.psn == b.psn);
    CHECK(v.path == b.path);
    CHECK(v.plane == b.plane);
    CHECK(v.tx_ts == b.tx_ts);
}

size_t build_fixed_op(std::span<uint8_t> out, const bth_fields& b)
{
    switch (b.op) {
    case opcode::ack: {
        ack_header a{};
        a.ts_echo = be32_t::from_host(7);
        return build_ack(out, b, a);
    }
    case opcode::nak: return build_nak(out, b, nak_header{});
    case opcode::connect:
    case opcode::accept: return build_hello(out, b, hello_header{});
    case opcode::close:
    case opcode::close_ack: return build_close(out, b, close_header{});
    case opcode::cookie: return build_cookie(out, b, cookie_header{});
    default: return build_probe(out, b, probe_header{});
    }
}

} // namespace

TEST_CASE("header sizes match the spec", "[codec]")
{
    STATIC_REQUIRE(sizeof(bth) == 20);
    STATIC_REQUIRE(sizeof(msg_header) == 24);
    STATIC_REQUIRE(sizeof(reth) == 16);
    STATIC_REQUIRE(sizeof(imm_header) == 4);
    STATIC_REQUIRE(sizeof(ack_header) == 48);
    STATIC_REQUIRE(sizeof(nak_header) == 8);
    STATIC_REQUIRE(sizeof(hello_header) == 40);
    STATIC_REQUIRE(sizeof(close_header) == 8);
    STATIC_REQUIRE(sizeof(probe_header) == 8);
    STATIC_REQUIRE(sizeof(cookie_header) == 24);
    CHECK(data_header_len(opcode::write) == 60);
    CHECK(data_header_len(opcode::write_imm) == 64);
    CHECK(data_header_len(opcode::send) == 44);
    CHECK(data_header_len(opcode::send_imm) == 48);
    CHECK(data_header_len(opcode::read_req) == 60);
    CHECK(data_header_len(opcode::read_resp) == 44);
    CHECK(max_packet_len(4096) == 20 + 24 + 16 + 4 + 4096);
    CHECK(info(opcode::ack).ext_len == 48);
    CHECK(info(opcode::connect).ext_len == 40);
    CHECK(info(opcode::cookie).ext_len == 24);
    CHECK(info(opcode::probe_ack).ext_len == 8);
    int valid = 0;
    for (const auto& i : k_opcodes) {
        valid += i.valid;
    }
    CHECK(valid == 15);
}

TEST_CASE("every data opcode round-trips through build and parse", "[codec]")
{
    for (opcode op : k_data_ops) {
        INFO("opcode " << info(op).name);
        const opcode_info& oi = info(op);
        const bth_fields b = sample_bth(op);
        const msg_fields m = sample_msg();
        std::array<uint8_t, 10> payload{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        std::span<const uint8_t> pl = oi.has_payload ? std::span<const uint8_t>(payload)
                                                     : std::span<const uint8_t>();
        std::vector<uint8_t> buf(200, 0xee);
        const size_t n = build_data(buf, b, m, pl);
        REQUIRE(n == data_header_len(op) + pl.size());
        const parse_result r = parse(std::span(buf.data(), n));
        REQUIRE(r.error == parse_error::none);
        check_bth(r.pkt, b);
        CHECK(r.pkt.stream == m.stream);
        CHECK(r.pkt.msn == m.msn);
        CHECK(r.pkt.ssn == m.ssn);
        CHECK(r.pkt.recv_seq == m.recv_seq);
        CHECK(r.pkt.msg_len == m.msg_len);
        CHECK(r.pkt.offset == m.offset);
        CHECK(r.pkt.va == (oi.has_reth ? m.va : 0));
        CHECK(r.pkt.rkey == (oi.has_reth ? m.rkey : 0));
        CHECK(r.pkt.imm == (oi.has_imm ? m.imm : 0));
        // The RETH's last word is a READ_REQ's rate hint, reserved elsewhere (spec 3.3).
        CHECK(r.pkt.read_hint_mbps == (op == opcode::read_req ? m.read_hint_mbps : 0));
        CHECK(r.pkt.is_last());
        REQUIRE(r.pkt.payload.size() == pl.size());
        CHECK(first_mismatch(pl, r.pkt.payload).empty());
        CHECK(r.pkt.payload.data() == buf.data() + data_header_len(op));
        // Too small a buffer by one byte is refused, not overrun.
        CHECK(build_data(std::span(buf.data(), n - 1), b, m, pl) == 0);
    }
}

TEST_CASE("every control opcode round-trips through build and parse", "[codec]")
{
    std::vector<uint8_t> buf(200);
    SECTION("ack")
    {
        const bth_fields b = sample_bth(opcode::ack);
        ack_header a{};
        a.ts_echo = be32_t::from_host(0x01020304);
        a.rate_hint_mbps = be32_t::from_host(100000);
        a.rx_pkts = be16_t::from_host(17);
        a.ce_pkts = be16_t::from_host(3);
        for (int i = 0; i < 32; ++i) {
            a.sack[i] = uint8_t(i * 7 + 1);
        }
        const size_t n = build_ack(buf, b, a);
        REQUIRE(n == 68);
        const auto r = parse(std::span(buf.data(), n));
        REQUIRE(r.ok());
        check_bth(r.pkt, b);
        REQUIRE(r.pkt.ack != nullptr);
        CHECK(r.pkt.ack->ts_echo.host() == 0x01020304);
        CHECK(r.pkt.ack->rate_hint_mbps.host() == 100000);
        CHECK(r.pkt.ack->rx_pkts.host() == 17);
        CHECK(r.pkt.ack->ce_pkts.host() == 3);
        for (int i = 0; i < 32; ++i) {
            CHECK(r.pkt.ack->sack[i] == uint8_t(i * 7 + 1));
        }
        CHECK(r.pkt.nak == nullptr);
        CHECK(r.pkt.payload.empty());
    }
    SECTION("nak")
    {
        const bth_fields b = sample_bth(opcode::nak);
        nak_header h{};
        h.reason = nak_reason::length_error;
        h.stream = be16_t::from_host(9);
        h.msn = be32_t::from_host(0x7777);
        const size_t n = build_nak(buf, b, h);
        REQUIRE(n == 28);
        const auto r = parse(std::span(buf.data(), n));
        REQUIRE(r.ok());
        check_bth(r.pkt, b);
        REQUIRE(r.pkt.nak != nullptr);
        CHECK(r.pkt.nak->reason == nak_reason::length_error);
        CHECK(r.pkt.nak->stream.host() == 9);
        CHECK(r.pkt.nak->msn.host() == 0x7777);
    }
    SECTION("connect and accept")
    {
        for (opcode op : {opcode::connect, opcode::accept}) {
            const bth_fields b = sample_bth(op);
            hello_header h{};
            h.nonce = be64_t::from_host(0x1122334455667788ull);
            h.src_conn = be32_t::from_host(0x00010002);
            h.isn = be32_t::from_host(0xfffffff0);
            h.paths = be16_t::from_host(256);
            h.mtu = be16_t::from_host(9000);
            h.max_streams = be16_t::from_host(16);
            h.max_msgs = be16_t::from_host(512);
            h.planes = 4;
            h.rq_depth = be16_t::from_host(128);
            h.cookie = be64_t::from_host(0x0102030405060708ull);
            const size_t n = build_hello(buf, b, h);
            REQUIRE(n == 60);
            const auto r = parse(std::span(buf.data(), n));
            REQUIRE(r.ok());
            check_bth(r.pkt, b);
            REQUIRE(r.pkt.hello != nullptr);
            CHECK(r.pkt.hello->nonce.host() == 0x1122334455667788ull);
            CHECK(r.pkt.hello->src_conn.host() == 0x00010002);
            CHECK(r.pkt.hello->isn.host() == 0xfffffff0);
            CHECK(r.pkt.hello->paths.host() == 256);
            CHECK(r.pkt.hello->mtu.host() == 9000);
            CHECK(r.pkt.hello->max_streams.host() == 16);
            CHECK(r.pkt.hello->max_msgs.host() == 512);
            CHECK(r.pkt.hello->planes == 4);
            CHECK(r.pkt.hello->rq_depth.host() == 128);
            CHECK(r.pkt.hello->cookie.host() == 0x0102030405060708ull);
        }
    }
    SECTION("cookie")
    {
        const bth_fields b = sample_bth(opcode::cookie);
        cookie_header c{};
        c.nonce = be64_t::from_host(0xa1a2a3a4a5a6a7a8ull);
        c.cookie = be64_t::from_host(0x1b2b3b4b5b6b7b8bull);
        c.ts_echo = be32_t::from_host(0x01020304u);
        const size_t n = build_cookie(buf, b, c);
        REQUIRE(n == 44);
        const auto r = parse(std::span(buf.data(), n));
        REQUIRE(r.ok());
        check_bth(r.pkt, b);
        REQUIRE(r.pkt.cookie != nullptr);
        CHECK(r.pkt.cookie->nonce.host() == 0xa1a2a3a4a5a6a7a8ull);
        CHECK(r.pkt.cookie->cookie.host() == 0x1b2b3b4b5b6b7b8bull);
        CHECK(r.pkt.cookie->ts_echo.host() == 0x01020304u);
    }
    SECTION("close, close_ack, probe, probe_ack")
    {
        for (opcode op : {opcode::close, opcode::close_ack}) {
            const bth_fields b = sample_bth(op);
            close_header c{};
            c.src_conn = be32_t::from_host(0xabcdef01);
            c.token = be32_t::from_host(0x5eed5eed);
            const size_t n = build_close(buf, b, c);
            REQUIRE(n == 28);
            const auto r = parse(std::span(buf.data(), n));
            REQUIRE(r.ok());
            check_bth(r.pkt, b);
            REQUIRE(r.pkt.close != nullptr);
            CHECK(r.pkt.close->src_conn.host() == 0xabcdef01);
            CHECK(r.pkt.close->token.host() == 0x5eed5eed);
        }
        for (opcode op : {opcode::probe, opcode::probe_ack}) {
            const bth_fields b = sample_bth(op);
            probe_header p{};
            p.token = be32_t::from_host(42);
            p.ts_echo = be32_t::from_host(0x80000001);
            const size_t n = build_probe(buf, b, p);
            REQUIRE(n == 28);
            const auto r = parse(std::span(buf.data(), n));
            REQUIRE(r.ok());
            check_bth(r.pkt, b);
            REQUIRE(r.pkt.probe != nullptr);
            CHECK(r.pkt.probe->token.host() == 42);
            CHECK(r.pkt.probe->ts_echo.host() == 0x80000001);
        }
    }
    SECTION("builders refuse a buffer one byte short")
    {
        for (opcode op : k_fixed_ops) {
            const size_t need = sizeof(bth) + info(op).ext_len;
            CHECK(build_fixed_op(std::span(buf.data(), need - 1), sample_bth(op)) == 0);
            CHECK(build_fixed_op(std::span(buf.data(), need), sample_bth(op)) == need);
        }
    }
}

TEST_CASE("BTH and a data packet are big-endian, byte for byte", "[codec]")
{
    std::vector<uint8_t> buf(128, 0xee);
    SECTION("BTH of a CLOSE")
    {
        const bth_fields b = sample_bth(opcode::close);
        close_header c{};
        c.src_conn = be32_t::from_host(0x0a0b0c0d);
        REQUIRE(build_close(buf, b, c) == 28);
        const uint8_t want[28] = {
            0x01, 0x22, 0x00, 0x05,             // version, opcode, flags (last|retx)
            0x01, 0x02, 0x03, 0x04,             // dst_conn
            0xff, 0xff, 0xff, 0xfe,             // psn
            200,  3,    0x00, 0x00,             // path, plane, reserved
            0xa1, 0xb2, 0xc3, 0xd4,             // tx_ts
            0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 0, // close: src_conn, reserved
        };
        CHECK(first_mismatch(want, std::span(buf.data(), 28)).empty());
    }
    SECTION("WRITE_IMM with 3 payload bytes")
    {
        bth_fields b;
        b.op = opcode::write_imm;
        b.flags = bth_flag::last | bth_flag::ack_req;
        b.dst_conn = 0x00030001;
        b.psn = 0x12345678;
        b.path = 5;
        b.plane = 1;
        b.tx_ts = 0x0000ff00;
        msg_fields m;
        m.stream = 2;
        m.msn = 0x10;
        m.ssn = 0x20;
        m.recv_seq = 0x30;
        m.msg_len = 0x103;
        m.offset = 0x100;
        m.va = 0x00007f0011223344ull;
        m.rkey = 0x5a5a0001;
        m.imm = 0x01020304;
        const uint8_t payload[3] = {0xaa, 0xbb, 0xcc};
        REQUIRE(build_data(buf, b, m, payload) == 67);
        const uint8_t want[67] = {
            0x01, 0x02, 0x00, 0x03, 0x00, 0x03, 0x00, 0x01, 0x12, 0x34, 0x56, 0x78, 5, 1, 0, 0,
            0x00, 0x00, 0xff, 0x00,                         // BTH
            0x00, 0x02, 0x00, 0x00,                         // stream, reserved
            0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20, // msn, ssn
            0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x01, 0x03, // recv_seq, msg_len
            0x00, 0x00, 0x01, 0x00,                         // offset
            0x00, 0x00, 0x7f, 0x00, 0x11, 0x22, 0x33, 0x44, // reth va
            0x5a, 0x5a, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // rkey, reserved
            0x01, 0x02, 0x03, 0x04,                         // imm
            0xaa, 0xbb, 0xcc,
        };
        CHECK(first_mismatch(want, std::span(buf.data(), 67)).empty());
    }
}

namespace {

parse_error parse_of(std::span<const uint8_t> b) { return parse(b).error; }

std::vector<uint8_t> data_packet(opcode op, uint32_t msg_len, uint32_t offset, size_t payload,
                                 uint16_t flags = bth_flag::last)
{
    bth_fields b;
    b.op = op;
    b.flags = flags;
    msg_fields m;
    m.msg_len = msg_len;
    m.offset = offset;
    std::vector<uint8_t> buf(data_header_len(op) + payload);
    std::vector<uint8_t> pl(payload, 0x33);
    REQUIRE(build_data_headers(buf, b, m, payload) == data_header_len(op));
    return buf;
}

} // namespace

TEST_CASE("parse rejects each malformation with its reason", "[codec]")
{
    std::vector<uint8_t> buf(256);
    SECTION("too_short at every boundary")
    {
        CHECK(parse_of({}) == parse_error::too_short);
        for (opcode op : k_fixed_ops) {
            const size_t n = build_fixed_op(buf, sample_bth(op));
            CHECK(parse_of(std::span(buf.data(), sizeof(bth) - 1)) == parse_error::too_short);
            CHECK(parse_of(std::span(buf.data(), n - 1)) == parse_error::too_short);
            CHECK(parse_of(std::span(buf.data(), n)) == parse_error::none);
        }
        for (opcode op : k_data_ops) {
            auto p = data_packet(op, 0, 0, 0);
            CHECK(parse_of(p) == parse_error::none);
            CHECK(parse_of(std::span(p.data(), p.size() - 1)) == parse_error::too_short);
            CHECK(parse_of(std::span(p.data(), sizeof(bth))) == parse_error::too_short);
            CHECK(parse_of(std::span(p.data(), sizeof(bth) + sizeof(msg_header))) ==
                  (info(op).ext_len == sizeof(msg_header) ? parse_error::none : parse_error::too_short));
        }
    }
    SECTION("bad_version")
    {
        const size_t n = build_fixed_op(buf, sample_bth(opcode::ack));
        for (uint8_t v : {0, 2, 0xff}) {
            buf[0] = v;
            CHECK(parse_of(std::span(buf.data(), n)) == parse_error::bad_version);
        }
        // The version is checked before the length of the opcode's headers.
        CHECK(parse_of(std::span(buf.data(), sizeof(bth))) == parse_error::bad_version);
    }
    SECTION("unknown_opcode")
    {
        const size_t n = build_fixed_op(buf, sample_bth(opcode::ack));
        int unknown = 0;
        for (int op = 0; op < 256; ++op) {
            buf[1] = uint8_t(op);
            if (!k_opcodes[op].valid) {
                ++unknown;
                CHECK(parse_of(std::span(buf.data(), n)) == parse_error::unknown_opcode);
            }
        }
        CHECK(unknown == 256 - 15);
    }
    SECTION("unknown_flags")
    {
        for (uint16_t f : {uint16_t(1u << 6), uint16_t(0x8000), uint16_t(0xffff)}) {
            bth_fields b = sample_bth(opcode::probe);
            b.flags = f;
            const size_t n = build_fixed_op(buf, b);
            CHECK(parse_of(std::span(buf.data(), n)) == parse_error::unknown_flags);
        }
        bth_fields b = sample_bth(opcode::probe);
        b.flags = bth_flag::known;
        CHECK(parse_of(std::span(buf.data(), build_fixed_op(buf, b))) == parse_error::none);
    }
    SECTION("trailing_bytes")
    {
        for (opcode op : k_fixed_ops) {
            const size_t n = build_fixed_op(buf, sample_bth(op));
            CHECK(parse_of(std::span(buf.data(), n + 1)) == parse_error::trailing_bytes);
        }
        auto rr = data_packet(opcode::read_req, 4096, 0, 1);
        CHECK(parse_of(rr) == parse_error::trailing_bytes);
    }
    SECTION("payload_overrun")
    {
        CHECK(parse_of(data_packet(opcode::write, 100, 0, 100)) == parse_error::none);
        CHECK(parse_of(data_packet(opcode::write, 100, 0, 101)) == parse_error::payload_overrun);
        CHECK(parse_of(data_packet(opcode::send, 100, 99, 2)) == parse_error::payload_overrun);
        CHECK(parse_of(data_packet(opcode::read_resp, 100, 0xffffffff, 1)) ==
              parse_error::payload_overrun);
        CHECK(parse_of(data_packet(opcode::send_imm, 0, 0, 1)) == parse_error::payload_overrun);
    }
    SECTION("empty_payload")
    {
        CHECK(parse_of(data_packet(opcode::write, 0, 0, 0)) == parse_error::none);
        CHECK(parse_of(data_packet(opcode::write, 10, 0, 0)) == parse_error::empty_payload);
        CHECK(parse_of(data_packet(opcode::write, 0, 0, 0, 0)) == parse_error::empty_payload);
        CHECK(parse_of(data_packet(opcode::send, 10, 10, 0)) == parse_error::empty_payload);
        CHECK(parse_of(data_packet(opcode::read_resp, 10, 5, 0)) == parse_error::empty_payload);
        // READ_REQ carries no payload by design, whatever its length.
        CHECK(parse_of(data_packet(opcode::read_req, 10, 0, 0, 0)) == parse_error::none);
    }
}

namespace {

struct fuzz_totals {
    std::array<uint64_t, size_t(parse_error::count_)> reasons{};
    uint64_t engine_fresh = 0; // well-formed packets that reached a healthy connection
};

// One round: a fresh pair moves real traffic, then its own packets, mutated, and noise
// are thrown at both engines. A fresh pair per round keeps the connection healthy long
// enough for mutated packets to reach placement, not only the error path.
void fuzz_round(uint64_t seed, int packets, fuzz_totals& tot)
{
    transport_config t;
    t.mtu = 1024;
    t.paths = 4;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 64 * 1024, k_all_access, 7);
    buffer dst(h.b(), 64 * 1024, k_all_access);
    buffer rsrc(h.b(), 8192, k_all_access, 9);
    buffer rdst(h.a(), 8192, k_all_access);
    buffer sdst(h.b(), 8192, k_all_access);
    buffer ssrc(h.a(), 3000, k_all_access, 4);
    REQUIRE(h.b().post_recv(pc, 1, make_recv(sdst, 50)) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, rdst, rsrc, 2), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send_imm, ssrc, sdst, 3, 1), h.now()) ==
            post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }));
    REQUIRE(first_mismatch(src.bytes, dst.bytes).empty());
    // Regions nobody targets: they must stay untouched whatever arrives.
    buffer quiet_b(h.b(), 4096, k_all_access);
    buffer quiet_a(h.a(), 4096, k_all_access);
    const std::vector<captured> corpus = h.sent;
    REQUIRE(corpus.size() > 50);

    std::array<uint64_t, size_t(parse_error::count_)> expect[2]{};
    const counters before[2] = {h.a().stats(), h.b().stats()};
    xorshift rng{seed};
    std::vector<uint8_t> pkt;
    uint64_t now = h.now();
    uint64_t fed[2] = {0, 0};
    std::vector<uint8_t> txbuf(max_packet_len(9000));
    for (int i = 0; i < packets; ++i) {
        const uint64_t r = rng.next();
        const captured& base = corpus[r % corpus.size()];
        int to = base.to;
        if ((r >> 20) % 4 == 0) {
            // Pure noise, sometimes with a plausible version and opcode.
            pkt.assign((r >> 24) % 160, 0);
            for (auto& v : pkt) {
                v = uint8_t(rng.next());
            }
            if (pkt.size() >= 2 && (r >> 40) % 2 == 0) {
                pkt[0] = k_version;
                pkt[1] = uint8_t(corpus[(r >> 8) % corpus.size()].bytes[1]);
            }
        } else {
            pkt = base.bytes;
            const int edits = 1 + int((r >> 24) % 4);
            for (int e = 0; e < edits; ++e) {
                const uint64_t q = rng.next();
                switch (q % 5) {
                case 0: pkt.resize(q / 8 % (pkt.size() + 1)); break;
                case 1: pkt.push_back(uint8_t(q >> 16)); break;
                default:
                    if (!pkt.empty()) {
                        // Mostly the headers, where the decisions are made.
                        const size_t at = (q >> 8) % std::min<size_t>(pkt.size(), (q >> 40) % 2 ? 80 : pkt.size());
                        pkt[at] ^= uint8_t(1u << ((q >> 32) % 8));
                    }
                    break;
                }
            }
        }
        const parse_result pr = parse(pkt);
        if (pr.ok() && !pr.pkt.payload.empty()) {
            // Every span the parser hands out lies inside the input.
            REQUIRE(pr.pkt.payload.data() >= pkt.data());
            REQUIRE(pr.pkt.payload.data() + pr.pkt.payload.size() <= pkt.data() + pkt.size());
        }
        ++expect[to][size_t(pr.error)];
        ++tot.reasons[size_t(pr.error)];
        if (pr.ok() && h.b().inspect(pc) && h.b().inspect(pc)->state == conn_state::established) {
            ++tot.engine_fresh;
        }
        rx_meta m = base.meta;
        m.ce = (r >> 50) % 8 == 0;
        endpoint& ep = to == 0 ? h.a() : h.b();
        ep.on_packet(m, pkt, now);
        ++fed[to];
        // Keep both engines running: drain what they send, advance time, fire timers.
        if (i % 64 == 0) {
            now += 20'000;
            for (endpoint* e : {&h.a(), &h.b()}) {
                tx_frame f;
                f.buf = txbuf;
                for (int k = 0; k < 256 && e->poll_tx(now, f); ++k) {
                    REQUIRE(f.len <= txbuf.size());
                    CHECK(parse(std::span(txbuf.data(), f.len)).ok());
                }
                e->on_timer(now);
                completion wc[64];
                while (e->poll_cq(wc) > 0) {
                }
            }
        }
    }
    for (int side = 0; side < 2; ++side) {
        const counters& s = side == 0 ? h.a().stats() : h.b().stats();
        INFO("side " << side);
        CHECK(s.rx_packets - before[side].rx_packets == fed[side]);
        for (size_t e = 1; e < size_t(parse_error::count_); ++e) {
            INFO("reason " << to_string(parse_error(e)));
            CHECK(s.rx_malformed[e] - before[side].rx_malformed[e] == expect[side][e]);
        }
        CHECK(s.rx_malformed[0] == 0);
    }
    CHECK(all_zero(quiet_a.bytes));
    CHECK(all_zero(quiet_b.bytes));
}

} // namespace

TEST_CASE("random and mutated packets never crash and are all counted", "[codec][fuzz]")
{
    fuzz_totals tot;
    for (uint64_t round = 0; round < 20; ++round) {
        fuzz_round(0x1234567 + round * 0x9e3779b9, 10000, tot);
    }
    // Sanity: the mix exercised every reason and also reached live connections.
    for (size_t e = 1; e < size_t(parse_error::count_); ++e) {
        INFO("reason " << to_string(parse_error(e)));
        CHECK(tot.reasons[e] > 0);
    }
    CHECK(tot.reasons[0] > 100000);
    CHECK(tot.engine_fresh > 1000);
}
