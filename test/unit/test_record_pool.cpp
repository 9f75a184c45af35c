// In-flight packet records come from one pool per endpoint (endpoint_config::record_chunks):
// a pool far too small for the window only slows a connection down, never loses or
// corrupts data, and teardown gives every chunk back.
#include <catch2/catch.hpp>

#include "metaroce/config.hpp"
#include "pair_harness.hpp"
#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// Which packets the lossy wires of this file drop (test_util.hpp lossy).
constexpr uint64_t k_loss_seed = 88172645463325252ull;

pair_harness small_pools(uint32_t chunks_a, uint32_t chunks_b, uint16_t paths = 16)
{
    transport_config t;
    t.paths = paths;
    endpoint_config a = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config b = pair_harness::config(pair_harness::k_addr_b, t, 22);
    a.record_chunks = chunks_a;
    b.record_chunks = chunks_b;
    return pair_harness(a, b, 1000);
}

} // namespace

TEST_CASE("record_chunks is validated with a precise message", "[record_pool]")
{
    endpoint_config c;
    c.record_chunks = 0;
    CHECK(validate(c).find("record_chunks") != std::string::npos);
    c.record_chunks = 65536;
    CHECK(validate(c).find("record_chunks") != std::string::npos);
    c.record_chunks = 65535;
    CHECK(validate(c).empty());
}

TEST_CASE("an exhausted record pool holds paths back like a full window", "[record_pool]")
{
    // 2 chunks for 16 paths: most paths find no record to send into.
    pair_harness h = small_pools(2, 2);
    h.filter = lossy(20, k_loss_seed);
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 5);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(dst.bytes == src.bytes);
    CHECK(h.a().stats().record_pool_waits > 0);
    CHECK(h.a().stats().retransmits > 0);
}

TEST_CASE("READ responses draw records from the responder's pool", "[record_pool]")
{
    pair_harness h = small_pools(4096, 1);
    h.filter = lossy(25, k_loss_seed);
    const conn_id c = h.connect();
    buffer dst(h.a(), 512 * 1024, k_all_access);
    buffer src(h.b(), 512 * 1024, k_all_access, 3);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, dst, src, 7), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(dst.bytes == src.bytes);
    CHECK(h.b().stats().record_pool_waits > 0);
}

TEST_CASE("closing connections mid-transfer gives every chunk back", "[record_pool]")
{
    // 3 chunks shared by 16 paths: a single chunk lost by a teardown would stall a
    // later connection for good.
    pair_harness h = small_pools(3, 3);
    h.filter = lossy(15, k_loss_seed);
    for (int round = 0; round < 4; ++round) {
        const conn_id c = h.connect();
        buffer src(h.a(), 256 * 1024, k_all_access, uint8_t(round + 1));
        buffer dst(h.b(), 256 * 1024, k_all_access);
        // The first goes out and is closed while in flight; the second must complete.
        REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
        for (int i = 0; i < 40; ++i) {
            h.step();
        }
        h.a().close(c, h.now());
        REQUIRE(h.run_until([&] { return !h.a().inspect(c); }));
        const conn_id c2 = h.connect();
        h.cq[0].clear();
        REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, dst, 2), h.now()) == post_result::ok);
        REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
        CHECK(h.cq[0][0].status == wc_status::success);
        CHECK(dst.bytes == src.bytes);
        h.a().close(c2, h.now());
        REQUIRE(h.run_until([&] { return !h.a().inspect(c2); }));
    }
}

TEST_CASE("state_bytes counts the records in flight, not paths x 256", "[record_pool][state]")
{
    transport_config t;
    t.paths = 64;
    pair_harness h(t);
    const conn_id c = h.connect();
    const size_t idle = h.a().inspect(c)->state_bytes;
    // Before the pool, each of the 64 paths kept 256 records of 24 B and a 256-entry
    // resend ring of 4 B whatever it carried: 448 KiB for the paths alone.
    CHECK(idle < 64 * 256 * 28 / 4);
    buffer src(h.a(), 4 << 20, k_all_access, 9);
    buffer dst(h.b(), 4 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    size_t peak = idle;
    REQUIRE(h.run_until([&] {
        peak = std::max(peak, h.a().inspect(c)->state_bytes);
        return !h.cq[0].empty();
    }));
    CHECK(dst.bytes == src.bytes);
    INFO("idle " << idle << " peak " << peak);
    // In flight: at least one chunk of 16 records (24 B each) per busy path.
    CHECK(peak >= idle + 16 * 16 * 24);
    // Let the last ACKs in, then the chunks are all back; the stream it used keeps its
    // record (48 B: its sequence numbers outlive the message).
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.a().inspect(c)->state_bytes == idle + 48);
}

namespace {

// Virtual ns two connections on one endpoint take for two 256 KiB WRITEs, with
// `chunks` record chunks on the sending side; records_waits gets the counter.
uint64_t two_writes(uint32_t chunks, uint64_t& record_waits)
{
    pair_harness h = small_pools(chunks, 4096, 4);
    const conn_id c1 = h.connect();
    const conn_id c2 = h.connect();
    REQUIRE(c1 != c2);
    buffer src1(h.a(), 256 * 1024, k_all_access, 1);
    buffer src2(h.a(), 256 * 1024, k_all_access, 2);
    buffer dst1(h.b(), 256 * 1024, k_all_access);
    buffer dst2(h.b(), 256 * 1024, k_all_access);
    const uint64_t start = h.now();
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src1, dst1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src2, dst2, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(h.cq[0][1].status == wc_status::success);
    CHECK(dst1.bytes == src1.bytes);
    CHECK(dst2.bytes == src2.bytes);
    record_waits = h.a().stats().record_pool_waits;
    return h.now() - start;
}

} // namespace

TEST_CASE("a connection starved of records is woken by another's release", "[record_pool]")
{
    // One chunk for the whole endpoint: while one connection holds it the other has
    // nothing in flight, so no ACK of its own wakes it; the release must (a timer or
    // a keepalive would, much later).
    uint64_t waits = 0;
    const uint64_t roomy = two_writes(4096, waits);
    CHECK(waits == 0);
    const uint64_t starved = two_writes(1, waits);
    CHECK(waits > 0);
    INFO("roomy " << roomy << " ns, starved " << starved << " ns");
    // 16 packets per round trip instead of a window: several times slower (about 6x
    // here), not the ~20x of waiting for path timers to fire (measured without the wake).
    CHECK(starved < 10 * roomy);
}
