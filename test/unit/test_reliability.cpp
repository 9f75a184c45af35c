// Loss recovery: exact retransmission, duplicates, lost ACKs, tail loss, black-holed
// routes and planes, giving up, and PSN wraparound.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

using path_psn = std::pair<uint8_t, uint32_t>;

std::map<path_psn, int> data_copies(const pair_harness& h, int to)
{
    std::map<path_psn, int> n;
    for (const captured& c : h.sent) {
        if (c.to == to && is_data(c)) {
            const auto v = c.view();
            ++n[{v.path, v.psn}];
        }
    }
    return n;
}

} // namespace

TEST_CASE("one lost data packet: exactly that (path, PSN) is resent, once", "[reliability]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 7);
    buffer dst(h.b(), 1 << 20, k_all_access);
    int seen = 0;
    path_psn lost{};
    uint16_t lost_sport = 0;
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_data(p) && ++seen == 20) {
            lost = {p.view().path, p.view().psn};
            lost_sport = p.frame.udp_sport;
            return true;
        }
        return false;
    };
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().retransmits == 1);
    CHECK(h.a().stats().timeouts == 0);
    const auto copies = data_copies(h, 1);
    CHECK(copies.size() == 256);
    for (const auto& [key, n] : copies) {
        INFO("path " << int(key.first) << " psn " << key.second);
        CHECK(n == (key == lost ? 2 : 1));
    }
    int retx = 0;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p) && (p.view().flags & wire::bth_flag::retx) != 0) {
            ++retx;
            CHECK(p.view().path == lost.first);
            CHECK(p.view().psn == lost.second);
            CHECK(p.frame.udp_sport == lost_sport); // same route: no timeout happened
        }
    }
    CHECK(retx == 1);
    CHECK(h.b().stats().rx_duplicates == 0);
    CHECK(h.b().stats().rx_payload_bytes == src.bytes.size());
}

TEST_CASE("a data packet delivered twice is counted once", "[reliability]")
{
    const auto op = GENERATE(wr_opcode::write, wr_opcode::send);
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 100000, k_all_access, 7);
    buffer dst(h.b(), 100000, k_all_access);
    REQUIRE(h.b().post_recv(h.peer_conn(), 0, make_recv(dst, 5)) == post_result::ok);
    int seen = 0;
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_data(p) && (++seen == 3 || p.view().is_last())) {
            captured copy = p;
            copy.deliver_at += 500;
            h.inject(copy);
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(op, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    h.run_until([] { return false; }, 5'000'000); // let everything settle
    CHECK(h.cq[0].size() == 1);
    CHECK(h.cq[1].size() == (op == wr_opcode::send ? 1u : 0u));
    CHECK(h.b().stats().rx_duplicates == 2);
    CHECK(h.b().stats().rx_payload_bytes == 100000);
    CHECK(h.a().stats().retransmits == 0);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
}

// The earliest a sender timer can fire after a send: no RTT sample is smaller than
// the round trip, and no timer (RTO, or a tail-loss probe of 2 RTTs) is shorter than two.
uint64_t earliest_timer(const pair_harness& h) { return 4 * h.delay(); }

TEST_CASE("lost ACKs alone cause resends only through the RTO", "[reliability]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 256 * 1024, k_all_access, 7);
    buffer dst(h.b(), 256 * 1024, k_all_access);
    const uint64_t t0 = h.now();
    const uint64_t blackout_end = t0 + 300'000;
    h.filter = [&](captured& p) { return p.to == 0 && is_op(p, wire::opcode::ack) && h.now() < blackout_end; };
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), t0) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().timeouts >= 1);
    CHECK(h.a().stats().retransmits >= 1);
    // Every data packet had arrived: each resend is a duplicate at the receiver.
    CHECK(h.b().stats().rx_duplicates == h.a().stats().retransmits);
    CHECK(h.b().stats().rx_payload_bytes == src.bytes.size());
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p) && (p.view().flags & wire::bth_flag::retx) != 0) {
            CHECK(p.deliver_at - h.delay() >= t0 + earliest_timer(h));
        }
    }
}

TEST_CASE("a lost last packet is recovered by the RTO", "[reliability]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 40000, k_all_access, 7);
    buffer dst(h.b(), 40000, k_all_access);
    uint64_t lost_at = 0;
    path_psn lost{};
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_data(p) && p.view().is_last() && lost_at == 0) {
            lost_at = h.now();
            lost = {p.view().path, p.view().psn};
            return true;
        }
        return false;
    };
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().timeouts <= 1); // 0 if a tail probe resent it at the same moment
    CHECK(h.a().stats().retransmits == 1);
    for (const auto& [key, n] : data_copies(h, 1)) {
        CHECK(n == (key == lost ? 2 : 1));
    }
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p) && (p.view().flags & wire::bth_flag::retx) != 0) {
            CHECK(p.deliver_at - h.delay() >= lost_at + earliest_timer(h));
        }
    }
}

TEST_CASE("a black-holed route moves its path to a new UDP source port", "[reliability][reroute]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const uint16_t dead = h.a().inspect(c)->path[3].udp_sport;
    buffer src(h.a(), 1 << 20, k_all_access, 7);
    buffer dst(h.b(), 1 << 20, k_all_access);
    uint64_t dropped = 0;
    h.filter = [&](captured& p) {
        const bool drop = p.frame.udp_sport == dead;
        dropped += drop;
        return drop;
    };
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(dropped > 0);
    CHECK(h.a().stats().reroutes >= 1);
    const auto info = *h.a().inspect(c);
    CHECK(info.path[3].udp_sport != dead);
    CHECK(info.path[3].udp_sport >= wire::k_udp_sport_min);
    for (const auto& p : info.path) {
        CHECK(p.udp_sport != dead);
    }
    // After the reroute, path 3 carried data on its new port, and it arrived.
    bool moved = false;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p) && p.view().path == 3 && p.frame.udp_sport != dead) {
            moved = true;
        }
    }
    CHECK(moved);
    CHECK(h.a().stats().conn_errors == 0);
}

TEST_CASE("a black-holed plane moves paths to the other plane", "[reliability][reroute]")
{
    transport_config t;
    t.planes = 2;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 7);
    buffer dst(h.b(), 1 << 20, k_all_access);
    h.filter = [&](captured& p) { return p.frame.plane == 1; };
    h.sent.clear();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().reroutes >= 4);
    const auto info = *h.a().inspect(c);
    for (const auto& p : info.path) {
        INFO("path " << int(p.index));
        CHECK(p.plane == 0);
    }
    // Every path that started on plane 1 delivered data on plane 0 afterwards.
    std::set<uint8_t> moved;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_data(p) && p.view().path % 2 == 1 && p.frame.plane == 0) {
            moved.insert(p.view().path);
        }
    }
    CHECK(moved.size() == 4);
    CHECK(h.a().stats().conn_errors == 0);
}

TEST_CASE("the connection fails with retry_exc_err when nothing gets through", "[reliability]")
{
    transport_config t;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 100000, k_all_access, 7);
    buffer dst(h.b(), 100000, k_all_access);
    h.filter = [](captured&) { return true; };
    const uint64_t t0 = h.now();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1, 0), t0) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2, 0), t0) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 3, 1), t0) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }));
    // It gives up only after the path stayed silent for fail_silence_ns (a descheduled
    // peer is not a dead one), and then promptly.
    CHECK(h.now() - t0 >= t.fail_silence_ns);
    CHECK(h.now() - t0 < t.fail_silence_ns + 2 * t.max_rto_ns);
    std::map<uint64_t, wc_status> st;
    for (const auto& wc : h.cq[0]) {
        st[wc.wr_id] = wc.status;
    }
    CHECK(st[1] == wc_status::retry_exc_err);
    CHECK(st[2] == wc_status::wr_flush_err);
    CHECK(st[3] == wc_status::wr_flush_err);
    REQUIRE(h.events[0].size() == 2);
    CHECK(h.events[0][1].what == conn_event::kind::error);
    CHECK(h.events[0][1].conn == c);
    CHECK(h.a().inspect(c)->state == conn_state::error);
    CHECK(h.a().stats().conn_errors == 1);
    CHECK(h.a().stats().timeouts > t.max_timeouts);
    CHECK(all_zero(dst.bytes));
    CHECK(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 4), h.now()) ==
          post_result::conn_not_usable);
}

TEST_CASE("transfers cross the 2^32 PSN wrap in both directions", "[reliability][wrap]")
{
    // Seeds chosen so both sides' initial PSNs sit just below 2^32.
    transport_config t;
    t.paths = 4;
    t.mtu = 1024;
    pair_harness h(t, t, 1000, 46733948, 50447799);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    const uint32_t isn_a = h.a().inspect(c)->path[0].una;
    const uint32_t isn_b = h.b().inspect(pc)->path[0].una;
    REQUIRE(isn_a >= 0xffffff00u);
    REQUIRE(isn_b >= 0xffffff00u);
    buffer src(h.a(), 1 << 20, k_all_access, 7);
    buffer dst(h.b(), 1 << 20, k_all_access);
    buffer rsrc(h.b(), 1 << 19, k_all_access, 9);
    buffer rdst(h.a(), 1 << 19, k_all_access);
    // Lose packets right at the wrap on both sides.
    std::set<std::pair<int, uint32_t>> lose{{1, 0xffffffffu}, {1, 0u}, {1, 1u}, {0, 0xffffffffu}, {0, 0u}};
    h.filter = [&](captured& p) {
        if (is_data(p) && p.view().path == 1 && (p.view().flags & wire::bth_flag::retx) == 0) {
            return lose.erase({p.to, p.view().psn}) > 0;
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, rdst, rsrc, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(lose.empty());
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(h.cq[0][1].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(first_mismatch(rsrc.bytes, rdst.bytes).empty());
    CHECK(h.a().stats().retransmits >= 3);
    CHECK(h.b().stats().retransmits >= 2);
    const auto ia = *h.a().inspect(c);
    const auto ib = *h.b().inspect(pc);
    for (int p = 0; p < 4; ++p) {
        CHECK(ia.path[p].next_psn < 0x1000u); // wrapped
        CHECK(ia.path[p].una == ia.path[p].next_psn);
        CHECK(ib.path[p].rx_expected == ia.path[p].next_psn);
        CHECK(ib.path[p].next_psn < 0x1000u);
        CHECK(ia.path[p].rx_expected == ib.path[p].next_psn);
    }
}

TEST_CASE("RNR: a receive posted long after the SEND is still matched", "[reliability][rnr]")
{
    // rnr_retries = 7 means retry forever: waiting for a receive is not a dead path.
    transport_config t;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 3000, k_all_access, 7);
    buffer dst(h.b(), 3000, k_all_access);
    const uint64_t t0 = h.now();
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1), t0) == post_result::ok);
    h.run_until([&] { return h.now() >= t0 + 50'000'000; }, 60'000'000);
    CHECK(h.cq[0].empty());
    CHECK(h.a().inspect(c)->state == conn_state::established);
    CHECK(h.b().stats().rx_rnr >= 2);
    REQUIRE(h.b().post_recv(h.peer_conn(), 0, make_recv(dst, 9)) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(h.cq[1][0].wr_id == 9);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().conn_errors == 0);
    CHECK(h.a().stats().reroutes == 0); // RNR says the route works
}

TEST_CASE("RNR with a retry limit fails with rnr_retry_exc_err", "[reliability][rnr]")
{
    transport_config t;
    t.rnr_retries = 2;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 3000, k_all_access, 7);
    buffer dst(h.b(), 3000, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(h.cq[0][0].wr_id == 1);
    CHECK(h.cq[0][0].status == wc_status::rnr_retry_exc_err);
    CHECK(h.cq[0][1].status == wc_status::wr_flush_err);
    CHECK(h.b().stats().rx_rnr >= 3);
    CHECK(all_zero(dst.bytes));
}

TEST_CASE("every op survives random loss in both directions", "[reliability][loss]")
{
    const double rate = GENERATE(0.02, 0.15);
    transport_config t;
    t.mtu = 1500;
    t.paths = 8;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    xorshift rng{31337};
    h.filter = [&](captured&) { return double(rng.next() % 10000) / 10000.0 < rate; };
    std::vector<std::unique_ptr<buffer>> bufs;
    auto mk = [&](endpoint& e, size_t n, uint8_t seed) -> buffer& {
        bufs.push_back(std::make_unique<buffer>(e, n, k_all_access, seed));
        return *bufs.back();
    };
    struct op_check {
        buffer* want;
        buffer* got;
    };
    std::vector<op_check> checks;
    for (int i = 0; i < 12; ++i) {
        const size_t len = 1000 + size_t(i) * 7919;
        const uint16_t stream = uint16_t(i % 3);
        buffer& a_buf = mk(h.a(), len, uint8_t(i + 1));
        const int kind = i % 4;
        if (kind == 0 || kind == 3) {
            buffer& b_buf = mk(h.b(), len, 0);
            if (kind == 3) {
                REQUIRE(h.b().post_recv(pc, stream, make_recv(b_buf, 500 + i)) == post_result::ok);
            }
            REQUIRE(h.a().post_send(c, make_wr(kind == 0 ? wr_opcode::write : wr_opcode::send, a_buf, b_buf, i, stream),
                                    h.now()) == post_result::ok);
            checks.push_back({&a_buf, &b_buf});
        } else if (kind == 1) {
            buffer& b_buf = mk(h.b(), len, uint8_t(i + 50));
            std::fill(a_buf.bytes.begin(), a_buf.bytes.end(), 0);
            REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, a_buf, b_buf, i, stream), h.now()) ==
                    post_result::ok);
            checks.push_back({&b_buf, &a_buf});
        } else {
            buffer& b_buf = mk(h.b(), len, 0);
            buffer& r_buf = mk(h.b(), 16, 0);
            REQUIRE(h.b().post_recv(pc, stream, make_recv(r_buf, 500 + i)) == post_result::ok);
            REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write_imm, a_buf, b_buf, i, stream), h.now()) ==
                    post_result::ok);
            checks.push_back({&a_buf, &b_buf});
        }
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 12 && h.cq[1].size() == 6; }));
    for (const auto& wc : h.cq[0]) {
        INFO("wr " << wc.wr_id);
        CHECK(wc.status == wc_status::success);
    }
    for (const auto& wc : h.cq[1]) {
        CHECK(wc.status == wc_status::success);
    }
    for (size_t i = 0; i < checks.size(); ++i) {
        INFO("op " << i);
        CHECK(first_mismatch(checks[i].want->bytes, checks[i].got->bytes).empty());
    }
    CHECK(h.a().stats().retransmits + h.b().stats().retransmits > 0);
}

TEST_CASE("many READs through a responder that serves one at a time, under loss", "[reliability][read]")
{
    transport_config t;
    t.max_reads = 1;
    t.mtu = 1024;
    pair_harness h(t);
    const conn_id c = h.connect();
    xorshift rng{8};
    h.filter = [&](captured&) { return rng.next() % 100 < 5; };
    std::vector<std::unique_ptr<buffer>> remote, local;
    for (int i = 0; i < 10; ++i) {
        remote.push_back(std::make_unique<buffer>(h.b(), 3000 + i * 1000, k_all_access, uint8_t(i + 1)));
        local.push_back(std::make_unique<buffer>(h.a(), 3000 + i * 1000, k_all_access));
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, *local[i], *remote[i], i, uint16_t(i % 3)), h.now()) ==
                post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 10; }));
    for (int i = 0; i < 10; ++i) {
        INFO("read " << i);
        CHECK(h.cq[0][i].status == wc_status::success);
        CHECK(first_mismatch(remote[i]->bytes, local[i]->bytes).empty());
    }
}

TEST_CASE("RNR for a large SEND (more NAKs than the NAK queue holds)", "[reliability][rnr]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 7);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1), h.now()) == post_result::ok);
    const uint64_t t0 = h.now();
    h.run_until([&] { return h.now() >= t0 + 5'000'000; }, 10'000'000);
    CHECK(h.b().stats().rx_rnr > 0);
    REQUIRE(h.b().post_recv(h.peer_conn(), 0, make_recv(dst, 9)) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(h.cq[1][0].status == wc_status::success);
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(h.a().stats().conn_errors == 0);
}
