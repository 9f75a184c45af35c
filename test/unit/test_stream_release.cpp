// A Verbs QP leaving the streams it shares a connection on (destroy, RESET, ERR):
// endpoint::withdraw_recvs takes back its receives, endpoint::orphan_sends frees its
// unfinished requests from the application's memory. Neither may write memory the QP
// gave up, nor fail the connection the peer's other QPs still use.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

constexpr uint16_t k_gone = 1;  // the stream of the QP that goes away
constexpr uint16_t k_other = 2; // another QP's stream on the same connection

recv_wr receive(const buffer& b, uint64_t id, uint32_t len)
{
    recv_wr r;
    r.wr_id = id;
    r.local = {b.va(), len, b.mr.lkey};
    return r;
}

bool has_completion(const std::vector<completion>& cq, uint64_t wr_id, wc_status st = wc_status::success)
{
    for (const completion& c : cq) {
        if (c.wr_id == wr_id && c.status == st) {
            return true;
        }
    }
    return false;
}

// A few WRITEs first: the windows a busy connection has (a lone first packet held by
// "not ready" would otherwise be all the window a new connection allows).
void warm_up(pair_harness& h, conn_id c)
{
    buffer from(h.a(), 64 * 1024, k_all_access, 1);
    buffer to(h.b(), 64 * 1024, k_all_access);
    for (uint64_t i = 0; i < 4; ++i) {
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, from, to, 900 + i), h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return has_completion(h.cq[0], 903); }));
    h.a().memory().deregister(from.mr.lkey);
    h.b().memory().deregister(to.mr.lkey);
    h.cq[0].clear();
    h.cq[1].clear();
}

} // namespace

TEST_CASE("withdrawn receives take no data; the stream's next receive does", "[stream_release]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    warm_up(h, c);
    buffer src(h.a(), 3000, k_all_access, 7);
    buffer gone(h.b(), 3000, k_all_access);
    buffer fresh(h.b(), 3000, k_all_access);
    buffer other(h.b(), 3000, k_all_access);
    for (uint64_t i = 0; i < 3; ++i) {
        REQUIRE(h.b().post_recv(pc, k_gone, receive(gone, 100 + i, 3000)) == post_result::ok);
    }
    REQUIRE(h.b().withdraw_recvs(pc, k_gone) == 3);
    CHECK(h.b().withdraw_recvs(pc, k_gone) == 0);

    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, gone, 1, k_gone), h.now()) == post_result::ok);
    REQUIRE(h.b().post_recv(pc, k_other, receive(other, 200, 3000)) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, other, 2, k_other), h.now()) == post_result::ok);
    // The other stream is served while the withdrawn one answers "not ready".
    h.run_until([&] { return has_completion(h.cq[1], 200) && h.b().stats().rx_rnr >= 2; });
    REQUIRE(has_completion(h.cq[1], 200));
    REQUIRE(h.b().stats().rx_rnr >= 2);
    CHECK(first_mismatch(src.bytes, other.bytes).empty());
    CHECK(all_zero(gone.bytes));
    CHECK_FALSE(has_completion(h.cq[0], 1));
    CHECK(h.b().inspect(pc)->state == conn_state::established);

    // A receive posted later (a new QP on the stream) gets the message, in sequence.
    REQUIRE(h.b().post_recv(pc, k_gone, receive(fresh, 300, 3000)) == post_result::ok);
    REQUIRE(h.run_until([&] { return has_completion(h.cq[0], 1) && has_completion(h.cq[1], 300); }));
    CHECK(first_mismatch(src.bytes, fresh.bytes).empty());
    CHECK(all_zero(gone.bytes));
}

TEST_CASE("a receive a message is already landing in is not withdrawn", "[stream_release]")
{
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 3 * 4096, k_all_access, 9);
    buffer dst(h.b(), 3 * 4096, k_all_access);
    buffer spare(h.b(), 3 * 4096, k_all_access);
    REQUIRE(h.b().post_recv(pc, k_gone, receive(dst, 10, 3 * 4096)) == post_result::ok);
    REQUIRE(h.b().post_recv(pc, k_gone, receive(spare, 11, 3 * 4096)) == post_result::ok);
    // The message's last packet is lost once: its first packets land, then the
    // receives are withdrawn while it is incomplete.
    bool dropped = false;
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_data(p) && (p.view().flags & wire::bth_flag::last) != 0 && !dropped) {
            dropped = true;
            return true;
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1, k_gone), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return dropped && h.b().stats().rx_payload_bytes >= 2 * 4096; }));
    CHECK(h.b().withdraw_recvs(pc, k_gone) == 1); // the spare only
    REQUIRE(h.run_until([&] { return has_completion(h.cq[0], 1) && has_completion(h.cq[1], 10); }));
    CHECK(first_mismatch(src.bytes, dst.bytes).empty());
    CHECK(all_zero(spare.bytes));
}

TEST_CASE("an orphaned send finishes from the engine's copy after its region is gone", "[stream_release]")
{
    const bool orphan = GENERATE(true, false);
    pair_harness h;
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    buffer src(h.a(), 5000, k_all_access, 5);
    const std::vector<uint8_t> sent = src.bytes;
    buffer dst(h.b(), 5000, k_all_access);
    // No receive yet: the SEND is held by "receiver not ready" and must be sent again.
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send, src, dst, 1, k_gone), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.b().stats().rx_rnr >= 1; }));
    if (orphan) {
        CHECK(h.a().orphan_sends(c, k_gone) == 1);
    }
    REQUIRE(h.a().memory().deregister(src.mr.lkey));
    std::fill(src.bytes.begin(), src.bytes.end(), uint8_t(0xee)); // the application reuses it
    REQUIRE(h.b().post_recv(pc, k_gone, receive(dst, 20, 5000)) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    if (orphan) {
        CHECK(h.cq[0][0].status == wc_status::success);
        REQUIRE(h.run_until([&] { return has_completion(h.cq[1], 20); }));
        CHECK(first_mismatch(sent, dst.bytes).empty());
        CHECK(h.a().inspect(c)->state == conn_state::established);
        // Its copy is the engine's until the request is done, then released.
        CHECK(h.a().orphan_sends(c, k_gone) == 0);
    } else {
        // Without it the resend finds the region gone: the whole connection fails,
        // the failure the Verbs front end must not cause for a destroyed QP.
        CHECK(h.cq[0][0].status == wc_status::loc_prot_err);
        CHECK(h.a().inspect(c)->state == conn_state::error);
        CHECK(all_zero(dst.bytes));
    }
}
