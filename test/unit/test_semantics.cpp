// Verbs semantics end to end: stream ordering, what a completion promises, WRITE tail
// ordering, immediates, length and access errors, posting rejections, unsignaled
// requests, close and flush, and packets that must be ignored.
#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

bool is_first_send_of(const captured& p, uint32_t msn)
{
    if (p.to != 1 || !is_data(p)) {
        return false;
    }
    const auto v = p.view();
    return v.msn == msn && (v.flags & wire::bth_flag::retx) == 0;
}

std::vector<std::unique_ptr<buffer>> buffers(endpoint& e, int n, size_t len, bool pattern)
{
    std::vector<std::unique_ptr<buffer>> v;
    for (int i = 0; i < n; ++i) {
        v.push_back(std::make_unique<buffer>(e, len + i, k_all_access, pattern ? uint8_t(i + 1) : 0));
    }
    return v;
}

} // namespace

TEST_CASE("within a stream completions follow posting order; streams are independent",
          "[semantics][order]")
{
    transport_config t;
    t.cc.conn_cwnd_first = t.cc.conn_cwnd_init; // all four messages on the wire before any ACK
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    auto src = buffers(h.a(), 4, 3000, true);
    auto dst = buffers(h.b(), 4, 3000, false);
    // Messages 0..2 on stream 0, message 3 on stream 1; message 0 arrives last.
    for (int i = 0; i < 4; ++i) {
        REQUIRE(h.b().post_recv(pc, i == 3 ? 1 : 0, make_recv(*dst[i], 100 + i)) == post_result::ok);
    }
    h.filter = [&](captured& p) {
        if (is_first_send_of(p, 0)) {
            p.deliver_at += 30'000;
        }
        return false;
    };
    uint64_t msg0_arrived = 0;
    std::vector<size_t> b_cq_when_msg0;
    std::vector<size_t> prev{0, 0};
    h.on_delivered = [&](const captured& p) {
        if (p.to == 1 && is_data(p) && p.view().msn == 0 && msg0_arrived == 0) {
            msg0_arrived = h.now();
            b_cq_when_msg0 = prev; // as things stood just before it arrived
        }
        h.drain_cq();
        prev = {h.cq[0].size(), h.cq[1].size()};
    };
    for (int i = 0; i < 4; ++i) {
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, *src[i], *dst[i], i, i == 3 ? 1 : 0), h.now()) ==
                post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 4 && h.cq[1].size() == 4; }));
    REQUIRE(msg0_arrived > 0);
    // By the time message 0 arrived, stream 1 had completed on both sides, stream 0 not.
    REQUIRE(b_cq_when_msg0.size() == 2);
    CHECK(b_cq_when_msg0[0] == 1);
    CHECK(b_cq_when_msg0[1] == 1);
    CHECK(h.cq[0][0].wr_id == 3);
    CHECK(h.cq[1][0].wr_id == 103);
    // Stream 0 in posting order on both sides.
    CHECK(h.cq[0][1].wr_id == 0);
    CHECK(h.cq[0][2].wr_id == 1);
    CHECK(h.cq[0][3].wr_id == 2);
    CHECK(h.cq[1][1].wr_id == 100);
    CHECK(h.cq[1][2].wr_id == 101);
    CHECK(h.cq[1][3].wr_id == 102);
    for (int i = 0; i < 4; ++i) {
        CHECK(first_mismatch(src[i]->bytes, dst[i]->bytes).empty());
        CHECK(h.cq[1][i].status == wc_status::success);
        CHECK(h.cq[1][i].op == wc_opcode::recv);
    }
}

TEST_CASE("a completion implies every earlier message of its stream has landed", "[semantics][order]")
{
    const double rate = GENERATE(0.0, 0.05, 0.2);
    transport_config t;
    t.mtu = 1024;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    const int n = 24;
    auto src = buffers(h.a(), n, 5000, true);
    auto dst = buffers(h.b(), n, 5000, false);
    xorshift rng{77};
    h.filter = [&](captured& p) {
        if (is_data(p) && double(rng.next() % 10000) / 10000.0 < rate) {
            return true;
        }
        // Jitter between paths (never within one: a path delivers in order).
        if (p.to == 1 && is_data(p)) {
            p.deliver_at += (p.view().path % 4) * 3000;
        }
        return false;
    };
    size_t checked = 0;
    int violations = 0;
    h.on_delivered = [&](const captured&) {
        h.drain_cq();
        for (; checked < h.cq[0].size(); ++checked) {
            const auto& wc = h.cq[0][checked];
            for (uint64_t k = wc.wr_id % 2; k <= wc.wr_id; k += 2) { // its stream: same parity
                if (!first_mismatch(src[k]->bytes, dst[k]->bytes).empty()) {
                    ++violations;
                    UNSCOPED_INFO("completion of " << wc.wr_id << " before " << k << " landed");
                }
            }
        }
    };
    for (int i = 0; i < n; ++i) {
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, *src[i], *dst[i], i, uint16_t(i % 2)), h.now()) ==
                post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == size_t(n); }));
    CHECK(checked == size_t(n));
    CHECK(violations == 0);
    uint64_t last[2] = {0, 0};
    bool first[2] = {true, true};
    for (const auto& wc : h.cq[0]) {
        CHECK(wc.status == wc_status::success);
        const int s = wc.stream;
        CHECK(s == int(wc.wr_id % 2));
        CHECK((first[s] || wc.wr_id > last[s]));
        first[s] = false;
        last[s] = wc.wr_id;
    }
}

TEST_CASE("a WRITE's last bytes land after all its other bytes", "[semantics][tail]")
{
    const double rate = GENERATE(0.0, 0.1, 0.3);
    transport_config t;
    t.mtu = 1000;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    const std::vector<uint32_t> sizes{1, 5, 8, 9, 999, 1000, 1001, 1007, 4000, 20000, 65536 + 3};
    std::vector<std::unique_ptr<buffer>> src, dst;
    for (size_t i = 0; i < sizes.size(); ++i) {
        src.push_back(std::make_unique<buffer>(h.a(), sizes[i], k_all_access, uint8_t(i + 1)));
        // No zero bytes in the source, so "set" means "written".
        for (auto& v : src.back()->bytes) {
            v = uint8_t(v == 0 ? 0x5a : v);
        }
        dst.push_back(std::make_unique<buffer>(h.b(), sizes[i], k_all_access));
    }
    xorshift rng{99};
    h.filter = [&](captured& p) {
        if (is_data(p) && double(rng.next() % 10000) / 10000.0 < rate) {
            return true;
        }
        if (p.to == 1 && is_data(p)) {
            // Later paths faster: a message's last packet often arrives first.
            p.deliver_at += (7 - p.view().path % 8) * 2000;
        }
        return false;
    };
    int early_tails = 0;
    uint64_t checks = 0;
    h.on_delivered = [&](const captured& p) {
        if (p.to != 1) {
            return;
        }
        for (size_t i = 0; i < sizes.size(); ++i) {
            const auto& d = dst[i]->bytes;
            const size_t tail = std::min<size_t>(8, d.size());
            bool any_tail = false;
            for (size_t k = d.size() - tail; k < d.size(); ++k) {
                any_tail = any_tail || d[k] != 0;
            }
            if (any_tail) {
                ++checks;
                if (!first_mismatch(src[i]->bytes, d).empty()) {
                    ++early_tails;
                    UNSCOPED_INFO("message " << i << ": " << first_mismatch(src[i]->bytes, d));
                }
            }
        }
    };
    for (size_t i = 0; i < sizes.size(); ++i) {
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, *src[i], *dst[i], i), h.now()) ==
                post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == sizes.size(); }));
    CHECK(early_tails == 0);
    CHECK(checks > 0);
    for (size_t i = 0; i < sizes.size(); ++i) {
        INFO("message " << i);
        CHECK(h.cq[0][i].status == wc_status::success);
        CHECK(first_mismatch(src[i]->bytes, dst[i]->bytes).empty());
    }
}

TEST_CASE("WRITE_IMM lands at the address, consumes a receive and reports the immediate",
          "[semantics][imm]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 10000, k_all_access, 3);
    buffer dst(h.b(), 10000, k_all_access);
    buffer rbuf(h.b(), 64, k_all_access);
    buffer rbuf2(h.b(), 64, k_all_access);
    REQUIRE(h.b().post_recv(pc, 2, make_recv(rbuf, 500)) == post_result::ok);
    REQUIRE(h.b().post_recv(pc, 2, make_recv(rbuf2, 501)) == post_result::ok);
    auto wr = make_wr(wr_opcode::write_imm, src, dst, 1, 2);
    wr.imm = 0xfeedbeef;
    REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    h.run_until([] { return false; }, 1'000'000);
    REQUIRE(h.cq[1].size() == 1);
    const completion& r = h.cq[1][0];
    CHECK(r.wr_id == 500);
    CHECK(r.status == wc_status::success);
    CHECK(r.op == wc_opcode::recv_rdma_with_imm);
    CHECK(r.has_imm);
    CHECK(r.imm == 0xfeedbeef);
    CHECK(r.byte_len == 10000);
    CHECK(r.stream == 2);
    CHECK(r.conn == pc);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(all_zero(rbuf.bytes));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(h.cq[0][0].op == wc_opcode::write);
    // SEND_IMM reports its immediate on a plain receive.
    buffer s2(h.a(), 40, k_all_access, 4);
    auto wr2 = make_wr(wr_opcode::send_imm, s2, rbuf2, 2, 2);
    wr2.imm = 7;
    REQUIRE(h.a().post_send(c, wr2, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[1].size() == 2; }));
    CHECK(h.cq[1][1].wr_id == 501);
    CHECK(h.cq[1][1].op == wc_opcode::recv);
    CHECK(h.cq[1][1].has_imm);
    CHECK(h.cq[1][1].imm == 7);
    CHECK(h.cq[1][1].byte_len == 40);
    CHECK(first_mismatch(s2.bytes, std::span(rbuf2.bytes).first(40)).empty());
}

TEST_CASE("a SEND longer than its receive is refused whole", "[semantics][errors]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 9000, k_all_access, 3);
    buffer region(h.b(), 16384, k_all_access);
    recv_wr r;
    r.wr_id = 9;
    r.local = {region.va(), 1000, region.mr.lkey};
    REQUIRE(h.b().post_recv(pc, 0, r) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, region, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_inv_req_err);
    CHECK(h.cq[1][0].wr_id == 9);
    CHECK(h.cq[1][0].status == wc_status::loc_len_err); // as a Verbs responder reports it
    CHECK(all_zero(region.bytes)); // not a byte, inside or beyond the receive
    CHECK(h.b().stats().tx_naks >= 1);
    CHECK(h.a().stats().rx_naks >= 1);
    CHECK(h.a().inspect(c)->state == conn_state::error);
}

TEST_CASE("remote access violations write nothing and fail with rem_access_err", "[semantics][errors]")
{
    const int kind = GENERATE(0, 1, 2, 3, 4);
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 20000, k_all_access, 3);
    const uint32_t acc = kind == 2 ? (k_all_access & ~access::remote_write)
                         : kind == 3 ? (k_all_access & ~access::remote_read)
                                     : k_all_access;
    buffer remote(h.b(), 20000, acc, kind == 3 ? 5 : 0);
    const auto before = remote.bytes;
    auto wr = make_wr(kind == 3 ? wr_opcode::read : wr_opcode::write, src, remote, 1);
    std::fill(src.bytes.begin(), src.bytes.end(), kind == 3 ? 0 : 0x77);
    switch (kind) {
    case 0: wr.rkey = remote.mr.lkey; break;     // an lkey is not an rkey
    case 1: wr.remote_va = remote.va(1); break;  // one byte past the end
    case 4: wr.remote_va = remote.va() - 1; break;
    default: break;
    }
    INFO("case " << kind);
    REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::rem_access_err);
    CHECK(first_mismatch(before, remote.bytes).empty());
    if (kind == 3) {
        CHECK(all_zero(src.bytes)); // the READ brought nothing back
    }
    CHECK(h.b().stats().rx_access_errors >= 1);
    CHECK(h.b().stats().rx_payload_bytes == 0);
}

TEST_CASE("post_send and post_recv refuse bad requests and queue nothing", "[semantics][post]")
{
    transport_config t;
    t.max_msgs = 4;
    t.rq_depth = 2;
    t.max_streams = 3;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 4096, k_all_access, 3);
    buffer ro(h.a(), 4096, access::remote_read, 3); // no local_write
    buffer dst(h.b(), 4096, k_all_access);
    buffer rro(h.b(), 4096, access::remote_write);

    auto wr = make_wr(wr_opcode::write, src, dst, 1);
    CHECK(h.a().post_send(c + 0x10000, wr, h.now()) == post_result::no_such_conn);
    CHECK(h.a().post_send(k_no_conn, wr, h.now()) == post_result::no_such_conn);
    auto bad = wr;
    bad.local.lkey = src.mr.rkey;
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::bad_lkey);
    bad.local.lkey = 0xdeadbeef;
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::bad_lkey);
    bad = make_wr(wr_opcode::read, ro, dst, 2);
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::bad_access);
    bad = wr;
    bad.local.length = 4097;
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::out_of_bounds);
    bad = wr;
    bad.local.addr = src.va(1);
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::out_of_bounds);
    bad = wr;
    bad.stream = 3;
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::bad_stream);
    bad = wr;
    bad.local.length = (1u << 31) + 1;
    CHECK(h.a().post_send(c, bad, h.now()) == post_result::too_long);

    auto rr = make_recv(dst, 5);
    CHECK(h.b().post_recv(pc + 0x10000, 0, rr) == post_result::no_such_conn);
    CHECK(h.b().post_recv(pc, 3, rr) == post_result::bad_stream);
    auto rbad = rr;
    rbad.local.lkey = dst.mr.rkey;
    CHECK(h.b().post_recv(pc, 0, rbad) == post_result::bad_lkey);
    CHECK(h.b().post_recv(pc, 0, make_recv(rro, 6)) == post_result::bad_access);
    rbad = rr;
    rbad.local.length = 5000;
    CHECK(h.b().post_recv(pc, 0, rbad) == post_result::out_of_bounds);
    CHECK(h.b().post_recv(pc, 0, rr) == post_result::ok);
    CHECK(h.b().post_recv(pc, 0, rr) == post_result::ok);
    CHECK(h.b().post_recv(pc, 0, rr) == post_result::queue_full);
    CHECK(h.b().post_recv(pc, 1, rr) == post_result::ok); // per stream

    // Nothing was sent or queued by the refusals.
    h.sent.clear();
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.sent.empty());
    CHECK(h.a().inspect(c)->outstanding_msgs == 0);

    // Queue full at max_msgs outstanding; hold them by dropping data.
    h.filter = [](captured& p) { return is_data(p); };
    for (int i = 0; i < 4; ++i) {
        CHECK(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 10 + i), h.now()) == post_result::ok);
    }
    CHECK(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 14), h.now()) == post_result::queue_full);
    CHECK(h.a().inspect(c)->outstanding_msgs == 4);
    h.run_until([&] { return h.a().stats().tx_data_packets > 0; });
    h.filter = nullptr;
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 4; }));
    // The first accepted request took message number 0: refusals consumed none.
    bool saw_msn0 = false;
    for (const captured& p : h.sent) {
        if (is_data(p) && p.view().msn == 0) {
            saw_msn0 = p.view().ssn == 0;
        }
    }
    CHECK(saw_msn0);
    for (int i = 0; i < 4; ++i) {
        CHECK(h.cq[0][i].wr_id == uint64_t(10 + i));
        CHECK(h.cq[0][i].status == wc_status::success);
    }
    CHECK(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 14), h.now()) == post_result::ok);
}

TEST_CASE("unsignaled requests complete silently unless they fail", "[semantics][signal]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 8000, k_all_access, 3);
    buffer dst(h.b(), 8000, k_all_access);
    for (int i = 0; i < 5; ++i) {
        auto wr = make_wr(wr_opcode::write, src, dst, i);
        wr.signaled = i == 2 || i == 4;
        REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    h.run_until([] { return false; }, 1'000'000);
    REQUIRE(h.cq[0].size() == 2);
    CHECK(h.cq[0][0].wr_id == 2);
    CHECK(h.cq[0][1].wr_id == 4);
    CHECK(h.a().inspect(c)->outstanding_msgs == 0);
    CHECK(h.a().inspect(c)->tx_msgs_completed == 5);
    // A failing unsignaled request still reports its error.
    auto wr = make_wr(wr_opcode::write, src, dst, 9);
    wr.signaled = false;
    wr.rkey ^= 0x10000;
    REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }));
    CHECK(h.cq[0][2].wr_id == 9);
    CHECK(h.cq[0][2].status == wc_status::rem_access_err);
}

TEST_CASE("close: both sides get closed, outstanding requests flush", "[semantics][close]")
{
    const bool a_closes = GENERATE(true, false);
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 50000, k_all_access, 3);
    buffer dst(h.b(), 50000, k_all_access);
    buffer r1(h.b(), 100, k_all_access);
    buffer r2(h.a(), 100, k_all_access);
    REQUIRE(h.b().post_recv(pc, 0, make_recv(r1, 70)) == post_result::ok);
    REQUIRE(h.b().post_recv(pc, 1, make_recv(r1, 71)) == post_result::ok);
    REQUIRE(h.a().post_recv(c, 0, make_recv(r2, 80)) == post_result::ok);
    h.filter = [](captured& p) { return is_data(p); };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1, 0), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2, 1), h.now()) == post_result::ok);
    h.run_until([&] { return h.a().stats().tx_data_packets > 2; });
    if (a_closes) {
        h.a().close(c, h.now());
    } else {
        h.b().close(pc, h.now());
    }
    auto closed = [&](int s) {
        for (const auto& e : h.events[s]) {
            if (e.what == conn_event::kind::closed) {
                return true;
            }
        }
        return false;
    };
    REQUIRE(h.run_until([&] { return closed(0) && closed(1); }));
    h.drain_cq();
    std::map<uint64_t, wc_status> a, b;
    for (const auto& wc : h.cq[0]) {
        a[wc.wr_id] = wc.status;
    }
    for (const auto& wc : h.cq[1]) {
        b[wc.wr_id] = wc.status;
    }
    CHECK(a.size() == 3);
    CHECK(a[1] == wc_status::wr_flush_err);
    CHECK(a[2] == wc_status::wr_flush_err);
    CHECK(a[80] == wc_status::wr_flush_err);
    CHECK(b.size() == 2);
    CHECK(b[70] == wc_status::wr_flush_err);
    CHECK(b[71] == wc_status::wr_flush_err);
    CHECK(all_zero(dst.bytes));
    CHECK(h.a().connections().empty());
    CHECK(h.b().connections().empty());
    CHECK(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 3), h.now()) == post_result::no_such_conn);
    CHECK(h.events[0].back().conn == c);
    CHECK(h.events[1].back().conn == pc);
}

TEST_CASE("packets from the wrong address or for unknown connections are counted and ignored",
          "[semantics][rx]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 4000, k_all_access, 3);
    buffer dst(h.b(), 4000, k_all_access);
    std::vector<captured> data;
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_data(p)) {
            data.push_back(p);
            return true; // hold the real ones back for now
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !data.empty(); }));
    h.filter = nullptr;
    const counters before = h.b().stats();
    captured wrong = data[0];
    wrong.meta.src_addr = 0x0a0000ff;
    h.b().on_packet(wrong.meta, wrong.bytes, h.now());
    captured unknown = data[0];
    unknown.bytes[4] ^= 0x40; // dst_conn generation bits: no such connection
    h.b().on_packet(unknown.meta, unknown.bytes, h.now());
    captured bad_path = data[0];
    bad_path.bytes[12] = 200; // path index beyond the agreed paths
    h.b().on_packet(bad_path.meta, bad_path.bytes, h.now());
    CHECK(h.b().stats().rx_wrong_peer == before.rx_wrong_peer + 1);
    CHECK(h.b().stats().rx_unknown_conn == before.rx_unknown_conn + 1);
    CHECK(h.b().stats().rx_bad_path == before.rx_bad_path + 1);
    CHECK(h.b().stats().rx_payload_bytes == 0);
    CHECK(all_zero(dst.bytes));
    tx_frame f;
    std::vector<uint8_t> buf(wire::max_packet_len(9000));
    f.buf = buf;
    CHECK_FALSE(h.b().poll_tx(h.now(), f)); // nothing answered
    // The real packet still counts as new: nothing above consumed its PSN.
    h.b().on_packet(data[0].meta, data[0].bytes, h.now());
    CHECK(h.b().stats().rx_duplicates == 0);
    CHECK(h.b().stats().rx_payload_bytes == data[0].view().payload.size());
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
}

TEST_CASE("a complete message's packet replayed under a fresh PSN commits nothing twice",
          "[semantics][robustness]")
{
    // Only a broken or hostile peer does this; the responder must neither loop nor
    // report a receive twice.
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    auto src = buffers(h.a(), 3, 2000, true);
    auto dst = buffers(h.b(), 3, 2000, false);
    for (int i = 0; i < 3; ++i) {
        REQUIRE(h.b().post_recv(pc, 0, make_recv(*dst[i], 100 + i)) == post_result::ok);
    }
    h.filter = [&](captured& p) {
        if (is_first_send_of(p, 0)) {
            p.deliver_at += 30'000; // message 1 completes first and waits for 0
        }
        return false;
    };
    bool forged = false;
    h.on_delivered = [&](const captured& p) {
        if (!forged && p.to == 1 && is_data(p) && p.view().msn == 1) {
            forged = true;
            captured copy = p;
            const uint32_t psn = p.view().psn + 1;
            for (int k = 0; k < 4; ++k) {
                copy.bytes[8 + k] = uint8_t(psn >> (24 - 8 * k));
            }
            copy.deliver_at = h.now() + 100;
            h.inject(copy);
        }
    };
    for (int i = 0; i < 2; ++i) {
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, *src[i], *dst[i], i), h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[1].size() >= 2; }, 10'000'000));
    h.run_until([] { return false; }, 2'000'000);
    CHECK(forged);
    REQUIRE(h.cq[1].size() == 2);
    CHECK(h.cq[1][0].wr_id == 100);
    CHECK(h.cq[1][1].wr_id == 101);
    CHECK(h.cq[1][1].byte_len == 2001);
    CHECK(first_mismatch(src[0]->bytes, dst[0]->bytes).empty());
    CHECK(first_mismatch(src[1]->bytes, dst[1]->bytes).empty());
    CHECK(all_zero(dst[2]->bytes));
}

TEST_CASE("a receiver that stops polling its CQ loses no message", "[semantics][cq]")
{
    transport_config t;
    t.max_msgs = 8;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, t, 22);
    cb.cq_depth = 4;
    pair_harness h(ca, cb, 1000);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    const int n = 30;
    auto src = buffers(h.a(), n, 1000, true);
    auto dst = buffers(h.b(), n, 1000, false);
    for (int i = 0; i < n; ++i) {
        REQUIRE(h.b().post_recv(pc, 0, make_recv(*dst[i], 100 + i)) == post_result::ok);
    }
    h.auto_drain[1] = false;
    int posted = 0;
    for (; posted < n; ++posted) {
        if (h.a().post_send(c, make_wr(wr_opcode::send, *src[posted], *dst[posted], posted), h.now()) !=
            post_result::ok) {
            break;
        }
    }
    // The sender keeps posting as its completions come in.
    h.run_until([&] {
        while (posted < n &&
               h.a().post_send(c, make_wr(wr_opcode::send, *src[posted], *dst[posted], posted), h.now()) ==
                   post_result::ok) {
            ++posted;
        }
        return false;
    }, 20'000'000);
    CHECK(h.b().stats().rx_invalid == 0);
    // Now the application polls again and posts the rest.
    h.auto_drain[1] = true;
    h.drain_cq();
    REQUIRE(h.run_until([&] {
        while (posted < n &&
               h.a().post_send(c, make_wr(wr_opcode::send, *src[posted], *dst[posted], posted), h.now()) ==
                   post_result::ok) {
            ++posted;
        }
        return h.cq[0].size() == size_t(n) && h.cq[1].size() == size_t(n);
    }));
    for (int i = 0; i < n; ++i) {
        INFO("message " << i);
        CHECK(h.cq[0][i].status == wc_status::success);
        CHECK(h.cq[1][i].wr_id == uint64_t(100 + i));
        CHECK(first_mismatch(src[i]->bytes, dst[i]->bytes).empty());
    }
}

TEST_CASE("requests posted before the peer cut the stream count fail cleanly", "[semantics][connect]")
{
    transport_config ta;
    ta.max_streams = 8;
    transport_config tb;
    tb.max_streams = 2;
    pair_harness h(ta, tb);
    const conn_id c = h.a().connect(pair_harness::k_addr_b, h.now());
    buffer src(h.a(), 3000, k_all_access, 3);
    buffer dst(h.b(), 3000, k_all_access);
    buffer rb(h.a(), 3000, k_all_access);
    // Still connecting: the local limit (8 streams) applies.
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2, 6), h.now()) == post_result::ok);
    REQUIRE(h.a().post_recv(c, 7, make_recv(rb, 3)) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }, 50'000'000));
    std::map<uint64_t, wc_status> st;
    for (const auto& wc : h.cq[0]) {
        st[wc.wr_id] = wc.status;
    }
    CHECK(st[1] == wc_status::success);
    CHECK(st[2] != wc_status::success);
    CHECK(st[3] != wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
}

TEST_CASE("zero-length WRITE, SEND and READ complete", "[semantics][empty]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer a(h.a(), 64, k_all_access, 3);
    buffer b(h.b(), 64, k_all_access, 4);
    const auto b_before = b.bytes;
    REQUIRE(h.b().post_recv(pc, 0, make_recv(b, 50)) == post_result::ok);
    auto w = make_wr(wr_opcode::write, a, b, 1);
    w.local.length = 0;
    auto s = make_wr(wr_opcode::send_imm, a, b, 2);
    s.local.length = 0;
    auto r = make_wr(wr_opcode::read, a, b, 3);
    r.local.length = 0;
    auto wi = make_wr(wr_opcode::write_imm, a, b, 4);
    wi.local.length = 0;
    REQUIRE(h.b().post_recv(pc, 0, make_recv(b, 51)) == post_result::ok);
    for (const auto& wr : {w, s, r, wi}) {
        REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 4 && h.cq[1].size() == 2; }));
    for (int i = 0; i < 4; ++i) {
        CHECK(h.cq[0][i].wr_id == uint64_t(i + 1));
        CHECK(h.cq[0][i].status == wc_status::success);
        CHECK(h.cq[0][i].byte_len == 0);
    }
    CHECK(h.cq[1][0].wr_id == 50);
    CHECK(h.cq[1][0].byte_len == 0);
    CHECK(h.cq[1][0].has_imm);
    CHECK(h.cq[1][1].wr_id == 51);
    CHECK(h.cq[1][1].op == wc_opcode::recv_rdma_with_imm);
    CHECK(first_mismatch(b_before, b.bytes).empty());
}

TEST_CASE("both sides send on one connection at once", "[semantics][duplex]")
{
    transport_config t;
    t.paths = 4;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    xorshift rng{5};
    h.filter = [&](captured&) { return rng.next() % 100 < 5; };
    buffer a_src(h.a(), 200000, k_all_access, 1);
    buffer a_dst(h.a(), 200000, k_all_access);
    buffer b_src(h.b(), 200000, k_all_access, 2);
    buffer b_dst(h.b(), 200000, k_all_access);
    buffer a_rcv(h.a(), 5000, k_all_access);
    buffer b_rcv(h.b(), 5000, k_all_access);
    buffer a_msg(h.a(), 5000, k_all_access, 3);
    buffer b_msg(h.b(), 5000, k_all_access, 4);
    REQUIRE(h.a().post_recv(c, 0, make_recv(a_rcv, 60)) == post_result::ok);
    REQUIRE(h.b().post_recv(pc, 0, make_recv(b_rcv, 70)) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, a_src, b_dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.b().post_send(pc, make_wr(wr_opcode::write, b_src, a_dst, 2), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, a_msg, b_rcv, 3), h.now()) == post_result::ok);
    REQUIRE(h.b().post_send(pc, make_wr(wr_opcode::send, b_msg, a_rcv, 4), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3 && h.cq[1].size() == 3; }));
    for (int s = 0; s < 2; ++s) {
        for (const auto& wc : h.cq[s]) {
            CHECK(wc.status == wc_status::success);
        }
    }
    CHECK(first_mismatch(a_src.bytes, b_dst.bytes).empty());
    CHECK(first_mismatch(b_src.bytes, a_dst.bytes).empty());
    CHECK(first_mismatch(a_msg.bytes, b_rcv.bytes).empty());
    CHECK(first_mismatch(b_msg.bytes, a_rcv.bytes).empty());
}

TEST_CASE("close completes when CLOSE or CLOSE_ACK is lost, and when the peer is gone",
          "[semantics][close]")
{
    const int lose = GENERATE(0, 1, 2); // first CLOSE, first CLOSE_ACK, everything
    transport_config t;
    t.connect_retries = 3;
    pair_harness h(t);
    const conn_id c = h.connect();
    int closes = 0, acks = 0;
    h.filter = [&](captured& p) {
        if (lose == 2) {
            return true;
        }
        if (is_op(p, wire::opcode::close)) {
            return lose == 0 && closes++ == 0;
        }
        if (is_op(p, wire::opcode::close_ack)) {
            return lose == 1 && acks++ == 0;
        }
        return false;
    };
    h.a().close(c, h.now());
    REQUIRE(h.run_until([&] { return h.a().connections().empty(); }, 1'000'000'000));
    REQUIRE(!h.events[0].empty());
    CHECK(h.events[0].back().what == conn_event::kind::closed);
    CHECK(h.events[0].back().conn == c);
    if (lose != 2) {
        CHECK(h.b().connections().empty());
        CHECK(h.events[1].back().what == conn_event::kind::closed);
    } else {
        CHECK(h.b().connections().size() == 1); // it never heard of the close
    }
}

TEST_CASE("connecting to a silent peer fails with an error event", "[semantics][connect]")
{
    transport_config t;
    t.connect_retries = 3;
    t.connect_retry_ns = 100'000;
    pair_harness h(t);
    h.filter = [](captured&) { return true; };
    buffer a(h.a(), 64, k_all_access, 3);
    buffer b(h.b(), 64, k_all_access);
    const conn_id c = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(c != k_no_conn);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, a, b, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.events[0].empty(); }, 100'000'000));
    CHECK(h.events[0][0].what == conn_event::kind::error);
    // Four waits (the first retries do not back off), then the error; bounded either way.
    CHECK(h.now() >= 4 * t.connect_retry_ns);
    CHECK(h.now() <= 32 * t.connect_retry_ns);
    REQUIRE(h.cq[0].size() == 1);
    CHECK(h.cq[0][0].status == wc_status::retry_exc_err);
    size_t connects = 0;
    for (const captured& p : h.sent) {
        connects += is_op(p, wire::opcode::connect);
    }
    CHECK(connects == 4 * t.hello_copies); // first try and three retries, each with its copy

}

TEST_CASE("a restarted peer can connect again", "[semantics][connect]")
{
    pair_harness h;
    const conn_id c_old = h.connect();
    const conn_id pc_old = h.peer_conn();
    {
        buffer src(h.a(), 20000, k_all_access, 3);
        buffer dst(h.b(), 20000, k_all_access);
        REQUIRE(h.a().post_send(c_old, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
        REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
        h.cq[0].clear();
    }
    buffer rcv(h.b(), 100, k_all_access);
    REQUIRE(h.b().post_recv(pc_old, 0, make_recv(rcv, 77)) == post_result::ok);
    // Node A reboots with the same configuration (so the same seed) and reconnects.
    h.restart(0);
    h.run_until([] { return false; }, 3'000'000);
    const conn_id c = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c); }, 100'000'000));
    const conn_id pc = h.peer_conn();
    CHECK(pc != pc_old);
    // The old incarnation's connection is gone, its receive flushed.
    CHECK(!h.b().inspect(pc_old));
    CHECK(h.b().connections().size() == 1);
    bool flushed = false;
    for (const auto& wc : h.cq[1]) {
        flushed = flushed || (wc.wr_id == 77 && wc.status == wc_status::wr_flush_err);
    }
    CHECK(flushed);
    buffer src(h.a(), 50000, k_all_access, 5);
    buffer dst(h.b(), 50000, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }, 100'000'000));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.b().stats().rx_duplicates == 0);
}

TEST_CASE("after a failure, no later message of the stream completes successfully", "[semantics][order]")
{
    // Message 0 never gets through; message 1 (same stream) is delivered and
    // acknowledged. When the connection fails, message 1 must not report success:
    // its completion would claim message 0 had landed.
    const bool by_close = GENERATE(true, false);
    transport_config t;
    t.max_timeouts = 3;
    t.cc.conn_cwnd_first = t.cc.conn_cwnd_init; // message 1 goes out while message 0 is lost
    pair_harness h(t);
    const conn_id c = h.connect();
    auto src = buffers(h.a(), 3, 3000, true);
    auto dst = buffers(h.b(), 3, 3000, false);
    h.filter = [&](captured& p) { return p.to == 1 && is_data(p) && p.view().msn == 0; };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, *src[0], *dst[0], 0, 0), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, *src[1], *dst[1], 1, 0), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, *src[2], *dst[2], 2, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 1; })); // stream 1 completes
    CHECK(h.cq[0][0].wr_id == 2);
    // Message 1 landed except its tail, which waits for message 0 to commit.
    const size_t n1 = src[1]->bytes.size();
    CHECK(first_mismatch(std::span(src[1]->bytes).first(n1 - 8), std::span(dst[1]->bytes).first(n1 - 8)).empty());
    CHECK(all_zero(std::span(dst[1]->bytes).last(8)));
    if (by_close) {
        h.a().close(c, h.now());
    } else {
        h.filter = [](captured&) { return true; }; // the peer goes dark: retries run out
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }));
    CHECK(h.cq[0][1].wr_id == 0);
    CHECK(h.cq[0][1].status != wc_status::success);
    CHECK(h.cq[0][2].wr_id == 1);
    CHECK(h.cq[0][2].status == wc_status::wr_flush_err);
}

TEST_CASE("a solicited SEND's receive completion says so; others do not", "[semantics][solicited]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 5000, k_all_access, 3);
    buffer d0(h.b(), 5000, k_all_access), d1(h.b(), 5000, k_all_access), d2(h.b(), 5000, k_all_access);
    for (const buffer* d : {&d0, &d1, &d2}) {
        REQUIRE(h.b().post_recv(h.peer_conn(), 0, make_recv(*d, uint64_t(d == &d0 ? 10 : d == &d1 ? 11 : 12))) ==
                post_result::ok);
    }
    bool flagged_packet = false;
    h.on_delivered = [&](const captured& p) {
        flagged_packet |= p.to == 1 && is_data(p) && (p.view().flags & wire::bth_flag::solicited) != 0;
    };
    auto plain = make_wr(wr_opcode::send, src, d0, 1);
    auto solicited = make_wr(wr_opcode::send_imm, src, d1, 2);
    solicited.solicited = true;
    auto write = make_wr(wr_opcode::write, src, d2, 3);
    write.solicited = true; // a WRITE consumes no receive: nothing to flag
    REQUIRE(h.a().post_send(c, plain, h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, write, h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, solicited, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[1].size() == 2 && h.cq[0].size() == 3; }));
    CHECK(flagged_packet);
    CHECK(h.cq[1][0].wr_id == 10);
    CHECK_FALSE(h.cq[1][0].solicited);
    CHECK(h.cq[1][1].wr_id == 11);
    CHECK(h.cq[1][1].solicited);
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
}
