// Defects a fuzzing and review pass found (issue 7), one regression each: a node that
// froze, memory written after deregistration, completions counting bytes instead of
// offsets, and a peer whose data never progresses while its probes do.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;
using namespace std::chrono_literals;

namespace {

// Runs `e`'s timers for `span` of virtual time with nothing on the wire; the watchdog
// fails the test if on_timer never returns.
void run_timers_alone(endpoint& e, uint64_t from, uint64_t span)
{
    watchdog w("on_timer", 10s);
    uint64_t now = from;
    for (int i = 0; i < 100000 && now < from + span; ++i) {
        const uint64_t t = e.next_timer();
        if (t == k_no_deadline) {
            return;
        }
        now = std::max(now, t);
        e.on_timer(now);
        tx_frame f;
        std::vector<uint8_t> buf(wire::max_packet_len(9000));
        f.buf = buf;
        while (e.poll_tx(now, f)) {
        }
    }
}

// Deregisters `lkey` on `owner` right after the first `op` packet reaches side `to`.
void deregister_after_first(pair_harness& h, int to, wire::opcode op, endpoint& owner, uint32_t lkey)
{
    h.on_delivered = [to, op, &owner, lkey, done = false](const captured& p) mutable {
        if (!done && p.to == to && is_op(p, op)) {
            done = true;
            REQUIRE(owner.memory().deregister(lkey));
        }
    };
}

bool drop_acks_from_b(const captured& p) { return p.to == 0 && is_op(p, wire::opcode::ack); }

transport_config one_at_a_time()
{
    transport_config t;
    t.paths = 1;
    t.cc.path_cwnd_init = 1;
    t.cc.path_cwnd_min = 1;
    t.cc.conn_cwnd_init = 1;
    t.cc.conn_cwnd_min = 1;
    return t;
}

// Rebuilds a captured data packet with some fields changed.
std::vector<uint8_t> rebuild(const wire::packet_view& v, uint32_t psn, uint8_t path,
                             const wire::packet_view& body)
{
    wire::bth_fields b;
    b.op = v.op;
    b.flags = body.flags;
    b.dst_conn = v.dst_conn;
    b.psn = psn;
    b.path = path;
    b.tx_ts = v.tx_ts;
    wire::msg_fields m;
    m.stream = body.stream;
    m.msn = body.msn;
    m.ssn = body.ssn;
    m.recv_seq = body.recv_seq;
    m.msg_len = body.msg_len;
    m.offset = body.offset;
    m.va = body.va;
    m.rkey = body.rkey;
    m.imm = body.imm;
    std::vector<uint8_t> out(wire::max_packet_len(9000));
    out.resize(wire::build_data(out, b, m, body.payload));
    return out;
}

} // namespace

TEST_CASE("on_timer returns after a close with data in flight", "[hostile][freeze]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 3);
    buffer dst(h.b(), 1 << 20, k_all_access);
    h.filter = drop_acks_from_b; // keep everything in flight
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    h.step(); // the first window goes out; its tail-loss probe is armed and not yet due
    REQUIRE(h.a().inspect(c)->inflight > 0);
    h.a().close(c, h.now());
    run_timers_alone(h.a(), h.now(), 1'000'000'000);
    CHECK(h.a().connections().empty()); // CLOSE retries ran out: it was freed
}

TEST_CASE("on_timer returns after a fatal NAK with data in flight", "[hostile][freeze]")
{
    transport_config t;
    t.cc.conn_cwnd_first = t.cc.conn_cwnd_init; // no ACK ever arrives: the first window is all
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 8 * 4096, k_all_access, 3); // fits the first window: all of it in flight
    buffer dst(h.b(), 8 * 4096, k_all_access);
    h.filter = [](const captured& p) { return drop_acks_from_b(p); }; // NAKs still pass
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    send_wr bad = make_wr(wr_opcode::write, src, dst, 2, 1);
    bad.local.length = 100;
    bad.rkey ^= 0x5a5a0000; // one WRITE with a bad rkey
    REQUIRE(h.a().post_send(c, bad, h.now()) == post_result::ok);
    {
        watchdog w("run_until", 10s);
        REQUIRE(h.run_until([&] { return h.a().inspect(c)->state == conn_state::error; }, 100'000'000));
        h.run_until([] { return false; }, 20'000'000);
    }
    run_timers_alone(h.a(), h.now(), 50'000'000);
}

TEST_CASE("impossible timer settings are refused by name", "[hostile][config]")
{
    endpoint_config ok;
    CHECK(validate(ok).empty());
    auto with = [](auto change) {
        endpoint_config c;
        change(c);
        return validate(c);
    };
    CHECK(with([](endpoint_config& c) { c.transport.max_rto_ns = 0; }).find("max_rto_ns") != std::string::npos);
    CHECK(with([](endpoint_config& c) { c.transport.min_rto_ns = 0; }).find("min_rto_ns") != std::string::npos);
    CHECK(with([](endpoint_config& c) { c.transport.mtu = 0; }).find("mtu") != std::string::npos);
    CHECK(with([](endpoint_config& c) { c.transport.paths = 0; }).find("paths") != std::string::npos);
    CHECK(with([](endpoint_config& c) { c.transport.connect_retry_ns = 0; }).find("connect_retry_ns") !=
          std::string::npos);
    CHECK(with([](endpoint_config& c) { c.transport.min_probe_ns = c.transport.max_rto_ns + 1; })
              .find("min_probe_ns") != std::string::npos);
    CHECK(with([](endpoint_config& c) { c.transport.idle_timeout_ns = c.transport.keepalive_ns; })
              .find("idle_timeout_ns") != std::string::npos);
    endpoint_config bad;
    bad.transport.max_rto_ns = 0;
    CHECK_THROWS_AS(endpoint(bad), std::invalid_argument);
}

TEST_CASE("a WRITE whose region is deregistered between its packets writes no more",
          "[hostile][dereg]")
{
    transport_config t = one_at_a_time();
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 3 * 4096, k_all_access, 7);
    buffer dst(h.b(), 3 * 4096, k_all_access);
    deregister_after_first(h, 1, wire::opcode::write, h.b(), dst.mr.lkey);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_access_err);
    // Only the first packet (before deregistration) landed.
    CHECK(first_mismatch(std::span(src.bytes).first(4096), std::span(dst.bytes).first(4096)).empty());
    CHECK(all_zero(std::span(dst.bytes).subspan(4096)));
    CHECK(h.b().stats().rx_access_errors >= 1);
}

// The receiver checks a WRITE's range once per region epoch (mr_table::epoch, 16 bits):
// 65,535 deregistrations bring the epoch back to the value its first packet saw, and the
// endpoint must have forgotten that check (the wrap hook), or the rest would land.
TEST_CASE("a WRITE whose region goes stays refused when the region epoch wraps", "[hostile][dereg]")
{
    transport_config t = one_at_a_time();
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 3 * 4096, k_all_access, 7);
    buffer dst(h.b(), 3 * 4096, k_all_access);
    std::vector<uint8_t> dummy(64);
    h.on_delivered = [&, done = false](const captured& p) mutable {
        if (done || p.to != 1 || !is_op(p, wire::opcode::write)) {
            return;
        }
        done = true;
        mr_table& m = h.b().memory();
        const uint16_t seen = m.epoch();
        REQUIRE(m.deregister(dst.mr.lkey));
        for (uint32_t i = 1; i < 65535; ++i) {
            const auto mr = m.register_region(dummy.data(), dummy.size(), k_all_access);
            REQUIRE(mr);
            REQUIRE(m.deregister(mr->lkey));
        }
        REQUIRE(m.epoch() == seen);
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_access_err);
    CHECK(first_mismatch(std::span(src.bytes).first(4096), std::span(dst.bytes).first(4096)).empty());
    CHECK(all_zero(std::span(dst.bytes).subspan(4096)));
    CHECK(all_zero(dummy));
    CHECK(h.b().stats().rx_access_errors >= 1);
}

TEST_CASE("a SEND whose receive buffer is deregistered mid-message writes no more", "[hostile][dereg]")
{
    pair_harness h(one_at_a_time());
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 3 * 4096, k_all_access, 9);
    buffer dst(h.b(), 3 * 4096, k_all_access);
    REQUIRE(h.b().post_recv(pc, 0, make_recv(dst, 77)) == post_result::ok);
    deregister_after_first(h, 1, wire::opcode::send, h.b(), dst.mr.lkey);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_op_err);
    CHECK(h.cq[1][0].wr_id == 77);
    CHECK(h.cq[1][0].status == wc_status::loc_prot_err);
    CHECK(all_zero(std::span(dst.bytes).subspan(4096)));
}

TEST_CASE("a receive checked at use takes a bad key at the post and fails the SEND that lands in it",
          "[hostile][dereg]")
{
    pair_harness h(one_at_a_time());
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 4096, k_all_access, 9);
    buffer dst(h.b(), 4096, k_all_access);
    recv_wr bad = make_recv(dst, 77);
    bad.local.lkey ^= 0x5a0000; // a key no region has
    CHECK(h.b().post_recv(pc, 0, bad) == post_result::bad_lkey); // checked at the post by default
    bad.check_at_use = true;
    REQUIRE(h.b().post_recv(pc, 0, bad) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_op_err);
    CHECK(h.cq[1][0].wr_id == 77);
    CHECK(h.cq[1][0].status == wc_status::loc_prot_err);
    CHECK(all_zero(dst.bytes));
}

TEST_CASE("a READ source deregistered while it is being answered is read no more", "[hostile][dereg]")
{
    pair_harness h(one_at_a_time());
    const conn_id c = h.connect();
    buffer local(h.a(), 3 * 4096, k_all_access);
    buffer remote(h.b(), 3 * 4096, k_all_access, 11);
    deregister_after_first(h, 0, wire::opcode::read_resp, h.b(), remote.mr.lkey);
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, local, remote, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_access_err);
    int resp_sent = 0;
    for (const captured& p : h.sent) {
        resp_sent += p.to == 0 && is_op(p, wire::opcode::read_resp) ? 1 : 0;
    }
    CHECK(resp_sent <= 2); // the one delivered, at most one already built
    CHECK(all_zero(std::span(local.bytes).subspan(2 * 4096)));
}

TEST_CASE("a READ's local buffer deregistered mid-response is written no more", "[hostile][dereg]")
{
    pair_harness h(one_at_a_time());
    const conn_id c = h.connect();
    buffer local(h.a(), 3 * 4096, k_all_access);
    buffer remote(h.b(), 3 * 4096, k_all_access, 13);
    deregister_after_first(h, 0, wire::opcode::read_resp, h.a(), local.mr.lkey);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, local, remote, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::loc_prot_err);
    CHECK(all_zero(std::span(local.bytes).subspan(4096)));
}

TEST_CASE("a send buffer deregistered mid-message is read no more", "[hostile][dereg]")
{
    pair_harness h(one_at_a_time());
    const conn_id c = h.connect();
    buffer src(h.a(), 4 * 4096, k_all_access, 15);
    buffer dst(h.b(), 4 * 4096, k_all_access);
    deregister_after_first(h, 0, wire::opcode::ack, h.a(), src.mr.lkey);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::loc_prot_err);
    CHECK(h.a().inspect(c)->state == conn_state::error);
    CHECK(all_zero(std::span(dst.bytes).subspan(2 * 4096)));
}

TEST_CASE("a packet repeating an offset under a fresh PSN does not complete a message",
          "[hostile][coverage]")
{
    transport_config t;
    t.paths = 1;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 2 * 4096, k_all_access, 21);
    buffer dst(h.b(), 2 * 4096, k_all_access);
    buffer rbuf(h.b(), 64, k_all_access);
    REQUIRE(h.b().post_recv(pc, 0, make_recv(rbuf, 5)) == post_result::ok);
    // The second packet (offset 4096) is replaced by the first's offset and bytes
    // under the second's PSN: two packets arrive, one offset never does.
    std::vector<uint8_t> first;
    h.filter = [&](captured& p) {
        if (p.to != 1 || !is_op(p, wire::opcode::write_imm)) {
            return false;
        }
        const auto v = p.view();
        if (v.offset == 0 && first.empty()) {
            first = p.bytes;
            return false;
        }
        if (v.offset == 4096 && !first.empty()) {
            p.bytes = rebuild(v, v.psn, v.path, wire::parse(first).pkt);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write_imm, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    CHECK(h.cq[0][0].status != wc_status::success);
    for (const completion& wc : h.cq[1]) {
        CHECK(wc.status != wc_status::success); // never "byte_len 8192" with half unwritten
    }
    CHECK(h.b().stats().rx_bad_shape >= 1);
    CHECK(all_zero(std::span(dst.bytes).subspan(4096)));
}

TEST_CASE("a READ response repeating an offset does not complete the READ", "[hostile][coverage]")
{
    transport_config t;
    t.paths = 1;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer local(h.a(), 2 * 4096, k_all_access);
    buffer remote(h.b(), 2 * 4096, k_all_access, 23);
    std::vector<uint8_t> first;
    h.filter = [&](captured& p) {
        if (p.to != 0 || !is_op(p, wire::opcode::read_resp)) {
            return false;
        }
        const auto v = p.view();
        if (v.offset == 0 && first.empty()) {
            first = p.bytes;
        } else if (v.offset == 4096 && !first.empty()) {
            p.bytes = rebuild(v, v.psn, v.path, wire::parse(first).pkt);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, local, remote, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status != wc_status::success);
    CHECK(all_zero(std::span(local.bytes).subspan(4096)));
}

TEST_CASE("data off the mtu grid is refused before anything is written", "[hostile][coverage]")
{
    transport_config t;
    t.paths = 1;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 4096, k_all_access, 25);
    buffer dst(h.b(), 2 * 4096, k_all_access);
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::write)) {
            const auto v = p.view();
            wire::packet_view shifted = v;
            shifted.offset = 100; // inside the message, but not a multiple of the mtu
            shifted.msg_len = 2 * 4096;
            p.bytes = rebuild(v, v.psn, v.path, shifted);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_inv_req_err);
    CHECK(all_zero(dst.bytes));
}

TEST_CASE("probes that pass while data does not still fail the connection", "[hostile][liveness]")
{
    transport_config t;
    t.paths = 2;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 64 * 1024, k_all_access, 27);
    buffer dst(h.b(), 64 * 1024, k_all_access);
    // An MTU the fabric does not carry: every data packet is lost, small ones pass.
    h.filter = [](const captured& p) { return p.to == 1 && is_data(p); };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    {
        watchdog w("run_until", 20s);
        REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }, 5'000'000'000ull));
    }
    CHECK(h.cq[0][0].status == wc_status::retry_exc_err);
    CHECK(h.a().stats().probe_acks > 0); // the probes did pass
}

TEST_CASE("a fabric dropping every other packet never stalls in silence", "[hostile][liveness]")
{
    transport_config t;
    t.paths = 4;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 256 * 1024, k_all_access, 29);
    buffer dst(h.b(), 256 * 1024, k_all_access);
    uint64_t n = 0;
    h.filter = [&](const captured&) { return (n++ & 1) == 1; };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    watchdog w("run_until", 20s);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }, 5'000'000'000ull));
    if (h.cq[0][0].status == wc_status::success) {
        CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    } else {
        CHECK(h.cq[0][0].status == wc_status::retry_exc_err);
    }
}

TEST_CASE("CE counts above the received count are capped", "[hostile][cc]")
{
    transport_config t;
    t.paths = 2;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 512 * 1024, k_all_access, 31);
    buffer dst(h.b(), 512 * 1024, k_all_access);
    h.filter = [](captured& p) {
        if (p.to == 0 && is_op(p, wire::opcode::ack)) {
            auto* a = reinterpret_cast<wire::ack_header*>(p.bytes.data() + sizeof(wire::bth));
            a->ce_pkts = wire::be16_t::from_host(0xffff);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    const conn_info info = *h.a().inspect(c);
    for (const path_info& p : info.path) {
        CHECK(p.acked_ce <= p.acked_rx);
    }
}

TEST_CASE("a rate hint below the floor is raised to it", "[hostile][cc]")
{
    transport_config t;
    t.paths = 2;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 256 * 1024, k_all_access, 33);
    buffer dst(h.b(), 256 * 1024, k_all_access);
    h.filter = [](captured& p) {
        if (p.to == 0 && is_op(p, wire::opcode::ack)) {
            auto* a = reinterpret_cast<wire::ack_header*>(p.bytes.data() + sizeof(wire::bth));
            a->rate_hint_mbps = wire::be32_t::from_host(1); // 1 Mb/s
        }
        return false;
    };
    const uint64_t start = h.now();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(h.a().inspect(c)->rate_hint_mbps == t.cc.min_rate_hint_mbps);
    CHECK(h.a().stats().rx_hint_floored > 0);
    // 256 KiB at the 100 Mb/s floor takes about 21 ms; at 1 Mb/s it would take 2 s.
    CHECK(h.now() - start < 100'000'000);
}

TEST_CASE("a message longer than 2^31 bytes is refused", "[hostile][coverage]")
{
    transport_config t;
    t.paths = 1;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 4096, k_all_access, 35);
    buffer dst(h.b(), 4096, k_all_access);
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::write)) {
            const auto v = p.view();
            wire::packet_view big = v;
            big.msg_len = 0xfffff000u;
            p.bytes = rebuild(v, v.psn, v.path, big);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_inv_req_err);
    CHECK(all_zero(dst.bytes));
}

TEST_CASE("packets for a connection that failed while connecting touch no path state",
          "[hostile][connect]")
{
    transport_config t;
    t.connect_retries = 2;
    pair_harness h(t);
    h.filter = [](const captured&) { return true; }; // the peer never answers
    const conn_id c = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return h.a().inspect(c)->state == conn_state::error; }));
    REQUIRE(h.a().inspect(c)->path.empty());
    h.filter = nullptr;
    const auto before = h.a().stats();
    for (wire::opcode op : {wire::opcode::write, wire::opcode::ack, wire::opcode::nak, wire::opcode::probe_ack}) {
        wire::bth_fields b;
        b.op = op;
        b.dst_conn = c;
        b.path = 3;
        std::vector<uint8_t> out(256);
        if (op == wire::opcode::write) {
            wire::msg_fields m;
            m.msg_len = 4;
            const uint8_t payload[4] = {1, 2, 3, 4};
            out.resize(wire::build_data(out, b, m, payload));
        } else if (op == wire::opcode::ack) {
            out.resize(wire::build_ack(out, b, wire::ack_header{}));
        } else if (op == wire::opcode::nak) {
            out.resize(wire::build_nak(out, b, wire::nak_header{}));
        } else {
            out.resize(wire::build_probe(out, b, wire::probe_header{}));
        }
        inject_bytes(h, 0, out);
    }
    h.step();
    CHECK(h.a().stats().rx_bad_path == before.rx_bad_path + 3);
}

TEST_CASE("receives flushed while the CQ is full complete once it drains", "[hostile][cq]")
{
    transport_config t;
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.cq_depth = 4;
    pair_harness h(pair_harness::config(pair_harness::k_addr_a, t, 11), cb, 1000);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer rbuf(h.b(), 4096, k_all_access);
    for (uint64_t i = 0; i < 10; ++i) {
        REQUIRE(h.b().post_recv(pc, 0, make_recv(rbuf, 100 + i)) == post_result::ok);
    }
    h.auto_drain[1] = false; // b's application is not polling
    buffer src(h.a(), 64, k_all_access, 3);
    send_wr bad = make_wr(wr_opcode::write, src, rbuf, 1);
    bad.rkey ^= 0x10000; // a fatal NAK puts b in ERROR: its 10 receives flush
    REQUIRE(h.a().post_send(c, bad, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.b().inspect(pc)->state == conn_state::error; }));
    std::vector<completion> got;
    completion wc[2];
    for (int round = 0; round < 20 && got.size() < 10; ++round) {
        const size_t n = h.b().poll_cq(wc); // two at a time, as a slow application
        got.insert(got.end(), wc, wc + n);
    }
    REQUIRE(got.size() == 10);
    for (size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].wr_id == 100 + i);
        CHECK(got[i].status == wc_status::wr_flush_err);
    }
}

TEST_CASE("a message naming a later receive than the next one completes no receive", "[hostile][recv]")
{
    transport_config t;
    t.paths = 1;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 64, k_all_access, 41);
    buffer dst(h.b(), 64, k_all_access);
    buffer rbuf(h.b(), 64, k_all_access);
    for (uint64_t i = 0; i < 3; ++i) {
        REQUIRE(h.b().post_recv(pc, 0, make_recv(rbuf, 10 + i)) == post_result::ok);
    }
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::write_imm)) {
            const auto v = p.view();
            wire::packet_view ahead = v;
            ahead.recv_seq = v.recv_seq + 2; // names receive #3 while #1 is next
            p.bytes = rebuild(v, v.psn, v.path, ahead);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write_imm, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[1].size() >= 3; }));
    for (size_t i = 0; i < h.cq[1].size(); ++i) {
        CHECK(h.cq[1][i].wr_id == 10 + i); // each receive once, in posting order
        CHECK(h.cq[1][i].status == wc_status::wr_flush_err);
    }
    CHECK(h.b().inspect(pc)->state == conn_state::error);
}

TEST_CASE("a connection closed by its peer while the CQ is full still reports every request",
          "[hostile][cq]")
{
    transport_config t;
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.cq_depth = 4;
    pair_harness h(pair_harness::config(pair_harness::k_addr_a, t, 11), cb, 1000);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer rbuf(h.b(), 4096, k_all_access);
    for (uint64_t i = 0; i < 10; ++i) {
        REQUIRE(h.b().post_recv(pc, 0, make_recv(rbuf, 100 + i)) == post_result::ok);
    }
    h.auto_drain[1] = false;
    h.a().close(c, h.now()); // b flushes 10 receives into a CQ of 4, then frees
    REQUIRE(h.run_until([&] { return h.a().connections().empty(); }));
    std::vector<completion> got;
    completion wc[2];
    for (int round = 0; round < 20 && got.size() < 10; ++round) {
        const size_t n = h.b().poll_cq(wc);
        got.insert(got.end(), wc, wc + n);
    }
    REQUIRE(got.size() == 10);
    for (size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].wr_id == 100 + i);
        CHECK(got[i].status == wc_status::wr_flush_err);
    }
    CHECK(h.b().connections().empty()); // freed once everything was reported
    size_t closed_events = 0;
    for (const conn_event& e : h.events[1]) {
        closed_events += e.what == conn_event::kind::closed ? 1 : 0;
    }
    CHECK(closed_events == 1);
}
