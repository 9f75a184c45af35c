// The five test engines both programs run, over two real endpoints joined by the
// in-memory wire: every test moves and checks its bytes, a corrupted byte on the wire
// is caught, and a run stopped midway ends with the peer's receives used up (`more`).
#include <catch2/catch.hpp>

#include <memory>

#include "engines/engine.hpp"
#include "engines/run_protocol.hpp"
#include "pair_harness.hpp"

using namespace metaroce;
using namespace metaroce::engines;
using metaroce::test::pair_harness;

namespace {

constexpr uint64_t k_region = 1 << 20;

struct side {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(k_region);
    memory_region mr{};
    std::unique_ptr<engine> eng;
};

// Active engine on a, passive on b, laid out as metaroce-perf does: the active side's
// echoes land in the upper half of its region.
struct run {
    pair_harness h;
    conn_id ca = k_no_conn;
    side a, b;
    test_kind kind;
    engine_setup sa;

    run(test_kind t, uint64_t size, uint64_t iters, transport_config tc = small_mtu()) : h(tc), kind(t)
    {
        ca = h.connect();
        a.mr = *h.a().memory().register_region(a.bytes.data(), k_region, test::k_all_access);
        b.mr = *h.b().memory().register_region(b.bytes.data(), k_region, test::k_all_access);
        sa = area(h.a(), ca, a);
        sa.remote_va = b.mr.va;
        sa.rkey = b.mr.rkey;
        sa.size = size;
        sa.slots = is_bw(t) ? 8 : 1;
        sa.depth = is_bw(t) ? 4 : 1;
        sa.iters = iters;
        sa.echo_offset = k_region / 2;
        a.eng = make_engine(t, role::active);
        b.eng = make_engine(t, role::passive);
        const ctrl_msg start = start_msg(t, sa, a.mr.va + sa.echo_offset, a.mr.rkey);
        REQUIRE(test_of(start) == t);
        b.eng->start(passive_setup(start, area(h.b(), h.peer_conn(), b)));
        a.eng->start(sa);
        REQUIRE(a.eng->failure().empty());
        REQUIRE(b.eng->failure().empty());
    }
    static transport_config small_mtu()
    {
        transport_config t;
        t.mtu = 1024; // messages of several packets
        return t;
    }
    static engine_setup area(endpoint& ep, conn_id c, side& s) { return setup_over(ep, {c}, s.mr); }
    // Steps the wire and the engines until the active one is finished (or time is up).
    bool run_to_end(uint64_t max_ns = 2'000'000'000ull)
    {
        return h.run_until(
            [&] {
                dispatch(0, *a.eng);
                dispatch(1, *b.eng);
                a.eng->pump(h.now());
                b.eng->pump(h.now());
                return a.eng->finished();
            },
            max_ns);
    }
    void dispatch(int s, engine& e)
    {
        for (const completion& c : h.cq[s]) {
            e.on_completion(c, h.now());
        }
        h.cq[s].clear();
    }
    // The passive side's verdict on what the active side did.
    std::vector<ctrl_msg> finish()
    {
        a.eng->verify(0);
        return answer_done(*b.eng, done_msg(*a.eng), true);
    }
};

} // namespace

TEST_CASE("every engine moves and checks its bytes", "[engines]")
{
    for (test_kind t : k_tests) {
        CAPTURE(test_name(t));
        run r(t, 3000, 40);
        REQUIRE(r.run_to_end());
        CHECK(r.a.eng->failure().empty());
        CHECK(r.b.eng->failure().empty());
        const engine_result& ar = r.a.eng->result();
        CHECK(ar.iterations == 40);
        CHECK(ar.bytes == 40 * 3000);
        CHECK(ar.errors == 0);
        if (!is_bw(t)) {
            CHECK(ar.latency.count == 40);
            CHECK(ar.latency.samples.size() == 40);
            CHECK(ar.latency.min_us > 0);
        }
        const auto answer = r.finish();
        REQUIRE(answer.size() == 1);
        REQUIRE(answer[0].type == ctrl_type::verdict);
        const verdict_info v = read_verdict(answer[0]);
        CHECK(v.bad == 0);
        CHECK(ar.bad_bytes == 0);
        // Someone compared bytes: the passive side, the active side, or both.
        const bool active_checks = t != test_kind::write_bw && t != test_kind::send_bw;
        CHECK(ar.checked == active_checks);
        CHECK((v.state == verdict_state::ok) == (t != test_kind::read_bw));
    }
}

TEST_CASE("a byte changed on the wire fails the check", "[engines]")
{
    for (test_kind t : k_tests) {
        CAPTURE(test_name(t));
        // Each slot written once (bandwidth), one ping (latency): what lands last stays.
        run r(t, 3000, is_bw(t) ? 8 : 1);
        bool hit = false;
        r.h.filter = [&](test::captured& c) {
            const auto v = c.view();
            // One payload byte of one data packet towards the side that checks.
            const bool data = v.payload.size() > 16 &&
                              (v.op == wire::opcode::write || v.op == wire::opcode::send ||
                               v.op == wire::opcode::read_resp);
            if (!hit && data && c.frame.len > 40) {
                c.bytes[c.bytes.size() - 20] ^= 0x40;
                hit = true;
            }
            return false;
        };
        REQUIRE(r.run_to_end());
        REQUIRE(hit);
        const auto answer = r.finish();
        REQUIRE(answer.size() == 1);
        CHECK(r.a.eng->result().bad_bytes + read_verdict(answer[0]).bad > 0);
    }
}

TEST_CASE("a stopped run uses up the peer's receives before its verdict", "[engines]")
{
    for (test_kind t : {test_kind::send_bw, test_kind::send_lat}) {
        CAPTURE(test_name(t));
        run r(t, 2048, k_forever);
        r.h.run_until([&] {
            r.dispatch(0, *r.a.eng);
            r.dispatch(1, *r.b.eng);
            r.a.eng->pump(r.h.now());
            r.b.eng->pump(r.h.now());
            return r.a.eng->result().iterations >= 10;
        });
        r.a.eng->stop();
        REQUIRE(r.run_to_end());
        auto answer = answer_done(*r.b.eng, done_msg(*r.a.eng), true);
        REQUIRE(!answer.empty());
        REQUIRE(answer[0].type == ctrl_type::more);
        const uint64_t owed = answer[0].iters.host();
        const uint64_t before = r.a.eng->result().iterations;
        apply_more(*r.a.eng, answer[0]);
        REQUIRE(r.run_to_end());
        CHECK(r.a.eng->result().iterations == before + owed);
        answer = answer_done(*r.b.eng, done_msg(*r.a.eng), true);
        REQUIRE(answer.size() == 1);
        CHECK(answer[0].type == ctrl_type::verdict);
        CHECK(read_verdict(answer[0]).state == verdict_state::ok);
        CHECK(r.b.eng->unused_receives() == std::vector<uint64_t>{0});
    }
}

TEST_CASE("an area too small for the message is refused", "[engines]")
{
    run r(test_kind::write_bw, 3000, 10);
    engine_setup s = r.sa;
    s.area.length = 1000;
    auto e = make_engine(test_kind::write_bw, role::active);
    e->start(s);
    CHECK(e->failure().find("does not fit") != std::string::npos);
}
