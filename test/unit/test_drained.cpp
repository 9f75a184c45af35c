// DRAINED (spec 6.4): a sender marks the first transmission of the last packet of its
// newest posted request, when nothing more is queued behind it, so the receiver can hand
// that sender's share to the others at once instead of after its idle time.
#include <catch2/catch.hpp>

#include <vector>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

constexpr uint32_t k_len = 2 * 4096; // two packets per message

struct seen_packet {
    uint32_t msn;
    bool last;
    bool retx;
    bool drained;
};

} // namespace

TEST_CASE("only the last packet of the newest posted request says DRAINED", "[drained]")
{
    pair_harness h;
    const conn_id c = h.connect();
    buffer src(h.a(), k_len, k_all_access, 5);
    buffer dst(h.b(), 4 * k_len, k_all_access);
    std::vector<seen_packet> seen;
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_data(p)) {
            const auto v = p.view();
            seen.push_back({v.msn, (v.flags & wire::bth_flag::last) != 0,
                            (v.flags & wire::bth_flag::retx) != 0, (v.flags & wire::bth_flag::drained) != 0});
        }
        return false;
    };
    // Three WRITEs posted together: the queue empties only with the third's last packet.
    for (uint64_t i = 0; i < 3; ++i) {
        send_wr wr = make_wr(wr_opcode::write, src, dst, i + 1);
        wr.remote_va = dst.va() + i * k_len;
        REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }));
    // A fourth, posted once the others completed, drains the queue again.
    send_wr wr = make_wr(wr_opcode::write, src, dst, 4);
    wr.remote_va = dst.va() + 3 * k_len;
    REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 4; }));
    for (const auto& e : h.cq[0]) {
        CHECK(e.status == wc_status::success);
    }
    REQUIRE(seen.size() == 8);
    const uint32_t first = seen[0].msn;
    uint32_t drained = 0;
    for (const seen_packet& s : seen) {
        const uint32_t k = s.msn - first; // 0..3
        const bool expect = s.last && !s.retx && (k == 2 || k == 3);
        CHECK(s.drained == expect);
        drained += s.drained ? 1 : 0;
    }
    CHECK(drained == 2);
    // The bytes of every message landed.
    for (uint32_t i = 0; i < 4; ++i) {
        CHECK(std::equal(src.bytes.begin(), src.bytes.end(), dst.bytes.begin() + i * k_len));
    }
}
