// Gather/scatter lists (spec 4.1): a work request names up to k_max_sge pieces in any
// registered regions; bytes are gathered on send (retransmissions included) and
// scattered on receive and READ, every piece checked under its own key.
#include <catch2/catch.hpp>

#include <memory>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// Concatenation of the pieces, in list order.
std::vector<uint8_t> joined(const std::vector<sge>& list)
{
    std::vector<uint8_t> v;
    for (const sge& e : list) {
        const auto* p = reinterpret_cast<const uint8_t*>(e.addr);
        v.insert(v.end(), p, p + e.length);
    }
    return v;
}

} // namespace

TEST_CASE("a SEND gathered from pieces of two regions lands scattered over four", "[sge]")
{
    pair_harness h(small_mtu());
    const conn_id c = h.connect();
    buffer s1(h.a(), 5000, k_all_access, 7), s2(h.a(), 3000, k_all_access, 9);
    buffer d1(h.b(), 8192, k_all_access), d2(h.b(), 8192, k_all_access);
    // Pieces that straddle packet boundaries (mtu 1024) on both sides.
    const std::vector<sge> from{{s1.va(100), 1500, s1.mr.lkey}, {s2.va(0), 3000, s2.mr.lkey},
                                {s1.va(4000), 777, s1.mr.lkey}};
    const std::vector<sge> into{{d1.va(0), 1000, d1.mr.lkey}, {d2.va(10), 2000, d2.mr.lkey},
                                {d1.va(1000), 7, d1.mr.lkey}, {d2.va(2100), 2300, d2.mr.lkey}};
    recv_wr r;
    r.wr_id = 5;
    r.sg_list = into.data();
    r.num_sge = uint32_t(into.size());
    REQUIRE(h.b().post_recv(h.peer_conn(), 0, r) == post_result::ok);
    send_wr w;
    w.wr_id = 6;
    w.op = wr_opcode::send;
    w.sg_list = from.data();
    w.num_sge = uint32_t(from.size());
    REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); });
    REQUIRE(h.cq[0][0].status == wc_status::success);
    REQUIRE(h.cq[0][0].byte_len == 5277);
    REQUIRE(h.cq[1][0].status == wc_status::success);
    REQUIRE(h.cq[1][0].byte_len == 5277);
    const std::vector<uint8_t> want = joined(from);
    std::vector<uint8_t> got = joined({into[0], into[1], into[2], into[3]});
    got.resize(want.size()); // the receive list is 30 bytes longer than the message
    REQUIRE(first_mismatch(want, got).empty());
    REQUIRE(all_zero(std::span(d2.bytes).subspan(2010, 90))); // gap between pieces untouched
}

TEST_CASE("a gathered WRITE survives loss: retransmissions gather again", "[sge]")
{
    pair_harness h(small_mtu());
    const conn_id c = h.connect();
    buffer src(h.a(), 20000, k_all_access, 3), dst(h.b(), 20000, k_all_access);
    std::vector<sge> from;
    for (uint64_t off = 0; off < 16 * 1200; off += 1200) {
        from.push_back({src.va(off + 13), 1187, src.mr.lkey});
    }
    int dropped = 0;
    h.filter = [&](captured& p) { return p.to == 1 && is_data(p) && (p.view().psn % 3) == 1 && dropped++ < 6; };
    send_wr w;
    w.wr_id = 1;
    w.op = wr_opcode::write;
    w.sg_list = from.data();
    w.num_sge = uint32_t(from.size());
    w.remote_va = dst.va(50);
    w.rkey = dst.mr.rkey;
    REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    h.run_until([&] { return !h.cq[0].empty(); });
    REQUIRE(dropped >= 6);
    REQUIRE(h.cq[0][0].status == wc_status::success);
    const std::vector<uint8_t> want = joined(from);
    REQUIRE(first_mismatch(want, std::span(dst.bytes).subspan(50, want.size())).empty());
}

TEST_CASE("a READ scatters its response over the pieces of its list", "[sge]")
{
    pair_harness h(small_mtu());
    const conn_id c = h.connect();
    buffer remote(h.b(), 6000, k_all_access, 11), l1(h.a(), 3000, k_all_access), l2(h.a(), 3000, k_all_access);
    const std::vector<sge> into{{l1.va(1), 2500, l1.mr.lkey}, {l2.va(0), 3000, l2.mr.lkey}, {l1.va(2600), 400, l1.mr.lkey}};
    send_wr w;
    w.wr_id = 2;
    w.op = wr_opcode::read;
    w.sg_list = into.data();
    w.num_sge = 3;
    w.remote_va = remote.va(0);
    w.rkey = remote.mr.rkey;
    REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    h.run_until([&] { return !h.cq[0].empty(); });
    REQUIRE(h.cq[0][0].status == wc_status::success);
    REQUIRE(h.cq[0][0].byte_len == 5900);
    REQUIRE(first_mismatch(std::span(remote.bytes).first(5900), joined(into)).empty());
}

TEST_CASE("lists are checked piece by piece when posted", "[sge][errors]")
{
    pair_harness h(small_mtu());
    const conn_id c = h.connect();
    buffer a(h.a(), 4096, k_all_access, 1), ro(h.a(), 4096, access::remote_read, 2);
    std::vector<sge> list(k_max_sge + 1, sge{a.va(), 16, a.mr.lkey});
    send_wr w;
    w.op = wr_opcode::send;
    w.sg_list = list.data();
    w.num_sge = k_max_sge + 1;
    CHECK(h.a().post_send(c, w, h.now()) == post_result::too_many_sge);
    list[1].lkey ^= 0x5a5a;
    w.num_sge = 3;
    CHECK(h.a().post_send(c, w, h.now()) == post_result::bad_lkey);
    list[1] = {a.va(4090), 16, a.mr.lkey};
    CHECK(h.a().post_send(c, w, h.now()) == post_result::out_of_bounds);
    // A READ writes its list: a piece without local write is refused.
    list[1] = {ro.va(), 16, ro.mr.lkey};
    w.op = wr_opcode::read;
    w.remote_va = 0;
    CHECK(h.a().post_send(c, w, h.now()) == post_result::bad_access);
    recv_wr r;
    r.sg_list = list.data();
    r.num_sge = 3;
    CHECK(h.b().post_recv(h.peer_conn(), 0, r) == post_result::bad_lkey); // a's keys mean nothing at b
    h.step();
    CHECK(h.cq[0].empty());
}

TEST_CASE("a receive list shorter than the SEND fails it whole, nothing scattered", "[sge][errors]")
{
    pair_harness h(small_mtu());
    const conn_id c = h.connect();
    buffer src(h.a(), 3000, k_all_access, 5), d(h.b(), 3000, k_all_access);
    const std::vector<sge> into{{d.va(0), 1000, d.mr.lkey}, {d.va(2000), 999, d.mr.lkey}};
    recv_wr r;
    r.wr_id = 9;
    r.sg_list = into.data();
    r.num_sge = 2;
    REQUIRE(h.b().post_recv(h.peer_conn(), 0, r) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, d, 1), h.now()) == post_result::ok);
    h.run_until([&] { return !h.cq[0].empty() && !h.cq[1].empty(); });
    CHECK(h.cq[1][0].status == wc_status::loc_len_err);
    CHECK(h.cq[0][0].status != wc_status::success);
    CHECK(all_zero(d.bytes));
}

TEST_CASE("list entries go back to the pool when their request completes", "[sge][pool]")
{
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, small_mtu(), 1);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, small_mtu(), 2);
    ca.sge_entries = 8; // two blocks of four: two 3-piece requests at a time
    pair_harness h(ca, cb, 1000);
    const conn_id c = h.connect();
    buffer src(h.a(), 3000, k_all_access, 4), dst(h.b(), 3000, k_all_access);
    const std::vector<sge> from{{src.va(0), 1000, src.mr.lkey}, {src.va(1000), 1000, src.mr.lkey},
                                {src.va(2000), 1000, src.mr.lkey}};
    send_wr w;
    w.op = wr_opcode::write;
    w.sg_list = from.data();
    w.num_sge = 3;
    w.remote_va = dst.va();
    w.rkey = dst.mr.rkey;
    REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    CHECK(h.a().post_send(c, w, h.now()) == post_result::queue_full);
    for (int round = 0; round < 20; ++round) {
        h.run_until([&] { return h.cq[0].size() >= size_t(2 + round); });
        w.wr_id = uint64_t(round);
        REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    }
    h.run_until([&] { return h.cq[0].size() == 22; });
    for (const completion& wc : h.cq[0]) {
        REQUIRE(wc.status == wc_status::success);
    }
    REQUIRE(first_mismatch(src.bytes, dst.bytes).empty());
}
