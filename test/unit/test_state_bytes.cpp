// A connection's memory grows with what it has in flight, not with its configured
// windows (issue 12): message slots and RACK's send log come from endpoint pools while
// messages and packets are outstanding, and go back when the connection is idle.
// A pool far too small only slows a connection down, never loses or corrupts data.
#include <catch2/catch.hpp>

#include "metaroce/config.hpp"
#include "pair_harness.hpp"
#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// Which packets the lossy wires of this file drop (test_util.hpp lossy).
constexpr uint64_t k_loss_seed = 0x9e3779b97f4a7c15ull;

pair_harness with_pools(uint16_t paths, uint32_t send_chunks, uint32_t recv_chunks, uint32_t log_chunks)
{
    transport_config t;
    t.paths = paths;
    endpoint_config a = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config b = pair_harness::config(pair_harness::k_addr_b, t, 22);
    for (endpoint_config* c : {&a, &b}) {
        c->send_slot_chunks = send_chunks;
        c->recv_slot_chunks = recv_chunks;
        c->send_log_chunks = log_chunks;
    }
    return pair_harness(a, b, 1000);
}

size_t idle_bytes(uint16_t paths)
{
    transport_config t;
    t.paths = paths;
    pair_harness h(t);
    const conn_id c = h.connect();
    return h.a().inspect(c)->state_bytes;
}

} // namespace

TEST_CASE("pool sizes are validated with a precise message", "[state]")
{
    for (uint32_t endpoint_config::*f : {&endpoint_config::send_slot_chunks, &endpoint_config::recv_slot_chunks,
                                         &endpoint_config::send_log_chunks, &endpoint_config::read_job_chunks,
                                         &endpoint_config::sack_blocks, &endpoint_config::ack_blocks,
                                         &endpoint_config::stream_blocks}) {
        endpoint_config c;
        c.*f = 0;
        CHECK_FALSE(validate(c).empty());
        c.*f = 65536;
        CHECK_FALSE(validate(c).empty());
        c.*f = 65535;
        CHECK(validate(c).empty());
    }
}

TEST_CASE("an idle connection holds no message slots and no send log", "[state]")
{
    const size_t idle64 = idle_bytes(64);
    const size_t idle16 = idle_bytes(16);
    const size_t per_path = (idle64 - idle16) / 48;
    const size_t fixed = idle64 - 64 * per_path;
    INFO("idle 64 paths " << idle64 << " B, 16 paths " << idle16 << " B: " << per_path << " B per path, "
                          << fixed << " B per connection");
    // Before the pools (111,720 B and 97,720 B): 256 send slots of 144 B, 256 receive slots
    // of 72 B, a 4096-entry send log of 8 B, 64 READ jobs of 40 B, and per path a 48 B
    // in-flight block and a 32 B SACK bitmap, whatever the connection carried. With them,
    // 15,944 B and 6,056 B: 196 B per path (path_tx 172 B, path_rx 24 B).
    // Then a settled path kept 62 B: path_tx 32 B (its RTT, timers and congestion state
    // are in a pooled block while busy), path_rx 24 B and 2 B in each of three path rings,
    // and the connection 2,096 B (6,064 B with 64 paths). Now 48 B: path_rx keeps 16 B
    // (its ACK counters are pooled while an ACK is owed) and the path lists are threaded
    // through the paths; the NAK ring and the stream records are pooled too (until a
    // NAK waits, until a stream is used), leaving the connection record and the message
    // directories.
    CHECK(per_path <= 64);
    CHECK(idle64 <= 4096); // issue 12: an idle connection with 64 paths in 4 KiB
}

TEST_CASE("a settled path keeps its RTT estimates and window for its next busy spell", "[state]")
{
    transport_config t;
    t.paths = 4;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 4);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    h.run_until([] { return false; }, 1'000'000);
    // Settled: no block (its RTO shows 0), nothing held in the pools, and the summary
    // shows what the busy spell learnt: a sampled RTT and a window grown past its start.
    const conn_info idle = *h.a().inspect(c);
    CHECK(h.a().pools().held_bytes == 48); // only the record of the stream it used
    for (const path_info& p : idle.path) {
        INFO("path " << int(p.index));
        CHECK(p.rto_ns == 0);
        CHECK(p.srtt_ns > 0);
        CHECK(p.cwnd > t.cc.path_cwnd_init);
    }
    // The next spell's blocks start from the summary: before any ACK of it comes back,
    // each busy path shows the RTT and window it had when it settled, exactly.
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.a().inspect(c)->inflight > 0; }));
    const conn_info busy = *h.a().inspect(c);
    size_t taken = 0;
    for (const path_info& p : busy.path) {
        if (p.inflight == 0) {
            continue;
        }
        INFO("path " << int(p.index));
        ++taken;
        CHECK(p.rto_ns > 0);
        CHECK(p.srtt_ns == idle.path[p.index].srtt_ns);
        CHECK(p.cwnd == idle.path[p.index].cwnd);
    }
    CHECK(taken > 0);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(dst.bytes == src.bytes);
}

TEST_CASE("a busy connection's state grows and shrinks back when idle", "[state]")
{
    transport_config t;
    t.paths = 64;
    pair_harness h(t);
    const conn_id c = h.connect();
    const size_t idle_a = h.a().inspect(c)->state_bytes;
    const size_t idle_b = h.b().inspect(h.peer_conn())->state_bytes;
    // 40 WRITEs and 40 SENDs at once, on 4 streams: slots on both sides, the log on A,
    // and a record (48 B) for each stream used, on both sides, kept until teardown.
    constexpr int k_msgs = 40;
    std::vector<std::unique_ptr<buffer>> bufs;
    bufs.reserve(2 * k_msgs); // references below stay valid
    for (int i = 0; i < k_msgs; ++i) {
        auto& src = bufs.emplace_back(std::make_unique<buffer>(h.a(), 64 * 1024, k_all_access, uint8_t(i + 1)));
        auto& dst = bufs.emplace_back(std::make_unique<buffer>(h.b(), 64 * 1024, k_all_access));
        const uint16_t stream = uint16_t(i % 4);
        if (i % 2 == 1) {
            REQUIRE(h.b().post_recv(h.peer_conn(), stream, make_recv(*dst, 100 + i)) == post_result::ok);
        }
        send_wr wr = make_wr(i % 2 == 1 ? wr_opcode::send : wr_opcode::write, *src, *dst, uint64_t(i), stream);
        REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
    }
    // Posted receives keep their rings (sized by the first post of a stream).
    const size_t rings_b = h.b().inspect(h.peer_conn())->state_bytes;
    constexpr size_t k_stream_bytes = 48;
    CHECK(rings_b >= idle_b + 2 * k_stream_bytes + 2 * 256 * 32); // streams 1 and 3
    size_t peak_a = 0;
    size_t peak_b = 0;
    REQUIRE(h.run_until([&] {
        peak_a = std::max(peak_a, h.a().inspect(c)->state_bytes);
        peak_b = std::max(peak_b, h.b().inspect(h.peer_conn())->state_bytes);
        return h.cq[0].size() == size_t(k_msgs);
    }));
    for (int i = 0; i < k_msgs; ++i) {
        CHECK(h.cq[0][size_t(i)].status == wc_status::success);
        CHECK(bufs[size_t(2 * i + 1)]->bytes == bufs[size_t(2 * i)]->bytes);
    }
    INFO("A idle " << idle_a << " peak " << peak_a << "; B idle " << idle_b << " rings " << rings_b << " peak "
                   << peak_b);
    // A: 40 send slots span 3 chunks of 16 x 144 B, and the log at least one of 512 B.
    CHECK(peak_a >= idle_a + 3 * 16 * 144 + 512);
    // B: receive slots of the messages in progress, at least one chunk of 16 x 72 B.
    CHECK(peak_b >= rings_b + 16 * 72);
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.a().inspect(c)->state_bytes == idle_a + 4 * k_stream_bytes);
    CHECK(h.b().inspect(h.peer_conn())->state_bytes == rings_b + 2 * k_stream_bytes); // streams 0 and 2
    // The pools got every chunk back but the streams', and their high-water marks saw the peak.
    CHECK(h.a().pools().held_bytes == 4 * k_stream_bytes);
    CHECK(h.b().pools().held_bytes == 4 * k_stream_bytes);
    CHECK(h.a().pools().peak_bytes >= peak_a - idle_a);
    CHECK(h.a().pools().reserved_bytes > h.a().pools().peak_bytes);
}

TEST_CASE("a spent send slot pool refuses posts until completions return chunks", "[state]")
{
    pair_harness h = with_pools(4, 1, 4096, 2048);
    const conn_id c = h.connect();
    buffer src(h.a(), 4096, k_all_access, 3);
    buffer dst(h.b(), 4096, k_all_access);
    int posted = 0;
    while (h.a().post_send(c, make_wr(wr_opcode::write, src, dst, uint64_t(posted)), h.now()) == post_result::ok) {
        ++posted;
        REQUIRE(posted <= 16);
    }
    // One chunk is msns 0..15; the 17th is the next chunk.
    CHECK(posted == 16);
    CHECK(h.a().stats().slot_pool_waits == 1);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 16; }));
    // Completions gave the chunk back: the next post (msn 16, another chunk) goes.
    CHECK(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 99), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 17; }));
    CHECK(dst.bytes == src.bytes);
}

TEST_CASE("a spent receive slot pool defers messages, in order, without loss", "[state]")
{
    // Two receive chunks for 8 streams of SENDs and WRITEs arriving out of order over
    // 16 lossy paths: later messages must not take the chunk the next one to commit needs.
    pair_harness h = with_pools(16, 4096, 2, 2048);
    h.filter = lossy(30, k_loss_seed);
    const conn_id c = h.connect();
    constexpr int k_msgs = 64;
    std::vector<std::unique_ptr<buffer>> bufs;
    bufs.reserve(2 * k_msgs); // references below stay valid
    for (int i = 0; i < k_msgs; ++i) {
        auto& src = bufs.emplace_back(std::make_unique<buffer>(h.a(), 8 * 1024 + 100 * i, k_all_access, uint8_t(i + 7)));
        auto& dst = bufs.emplace_back(std::make_unique<buffer>(h.b(), 8 * 1024 + 100 * i, k_all_access));
        const uint16_t stream = uint16_t(i % 8);
        const bool send = i % 3 != 0;
        if (send) {
            REQUIRE(h.b().post_recv(h.peer_conn(), stream, make_recv(*dst, uint64_t(i))) == post_result::ok);
        }
        REQUIRE(h.a().post_send(c, make_wr(send ? wr_opcode::send : wr_opcode::write, *src, *dst, uint64_t(i), stream),
                                h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == size_t(k_msgs); }));
    for (const completion& wc : h.cq[0]) {
        CHECK(wc.status == wc_status::success);
    }
    for (int i = 0; i < k_msgs; ++i) {
        CHECK(bufs[size_t(2 * i + 1)]->bytes == bufs[size_t(2 * i)]->bytes);
    }
    CHECK(h.b().stats().slot_pool_waits > 0);
}

TEST_CASE("a spent send log pool costs RACK its entries, not data", "[state]")
{
    pair_harness h = with_pools(16, 4096, 4096, 1);
    h.filter = lossy(20, k_loss_seed);
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 5);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(dst.bytes == src.bytes);
    CHECK(h.a().stats().send_log_misses > 0);
    CHECK(h.a().stats().rack_losses > 0);
    // Closing while the log holds its chunk gives it back: a new connection logs again.
    h.a().close(c, h.now());
    REQUIRE(h.run_until([&] { return !h.a().inspect(c); }));
    const uint64_t misses = h.a().stats().send_log_misses;
    const conn_id c2 = h.connect();
    h.cq[0].clear();
    buffer small(h.a(), 4096, k_all_access, 6);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, small, dst, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.a().stats().send_log_misses == misses);
}

TEST_CASE("READs starved of job chunks wait for another connection's to finish", "[state]")
{
    // One job chunk for the responder's endpoint: two connections with 24 READs each
    // outstanding share it; the one left without must be woken by the other's release.
    transport_config t;
    t.paths = 8;
    endpoint_config a = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config b = pair_harness::config(pair_harness::k_addr_b, t, 22);
    b.read_job_chunks = 1;
    pair_harness h(a, b, 1000);
    const conn_id c1 = h.connect();
    const conn_id c2 = h.connect();
    constexpr int k_reads = 24;
    std::vector<std::unique_ptr<buffer>> bufs;
    bufs.reserve(4 * k_reads);
    for (int i = 0; i < 2 * k_reads; ++i) {
        auto& local = bufs.emplace_back(std::make_unique<buffer>(h.a(), 16 * 1024, k_all_access));
        auto& remote = bufs.emplace_back(std::make_unique<buffer>(h.b(), 16 * 1024, k_all_access, uint8_t(i + 3)));
        REQUIRE(h.a().post_send(i % 2 == 0 ? c1 : c2, make_wr(wr_opcode::read, *local, *remote, uint64_t(i)),
                                h.now()) == post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == size_t(2 * k_reads); }));
    for (const completion& wc : h.cq[0]) {
        CHECK(wc.status == wc_status::success);
    }
    for (int i = 0; i < 2 * k_reads; ++i) {
        CHECK(bufs[size_t(2 * i)]->bytes == bufs[size_t(2 * i + 1)]->bytes);
    }
    CHECK(h.b().stats().slot_pool_waits > 0);
}

TEST_CASE("a spent SACK bitmap pool refuses out-of-order packets, which are resent", "[state]")
{
    // One bitmap for 16 receiving paths on a lossy wire: a path whose hole is open holds
    // it; a packet opening another hole elsewhere is not taken and comes again.
    transport_config t;
    t.paths = 16;
    endpoint_config a = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config b = pair_harness::config(pair_harness::k_addr_b, t, 22);
    b.sack_blocks = 1;
    pair_harness h(a, b, 1000);
    h.filter = lossy(25, k_loss_seed);
    const conn_id c = h.connect();
    buffer src(h.a(), 2 << 20, k_all_access, 8);
    buffer dst(h.b(), 2 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(dst.bytes == src.bytes);
    CHECK(h.b().stats().sack_pool_waits > 0);
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.b().pools().held_bytes == 48); // every hole closed: the bitmap went back (the stream's record stays)
}

TEST_CASE("a spent ACK block pool refuses packets, which are resent", "[state]")
{
    // One block for 16 receiving paths: the path whose ACK is owed holds it until that
    // ACK is built; a packet on another path meanwhile is not taken and comes again.
    transport_config t;
    t.paths = 16;
    endpoint_config a = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config b = pair_harness::config(pair_harness::k_addr_b, t, 22);
    b.ack_blocks = 1;
    pair_harness h(a, b, 1000);
    h.filter = lossy(10, k_loss_seed);
    const conn_id c = h.connect();
    buffer src(h.a(), 1 << 20, k_all_access, 4);
    buffer dst(h.b(), 1 << 20, k_all_access);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, src, dst, 1), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    CHECK(h.cq[0][0].status == wc_status::success);
    CHECK(dst.bytes == src.bytes);
    CHECK(h.b().stats().ack_pool_waits > 0);
    h.run_until([] { return false; }, 1'000'000);
    CHECK(h.b().pools().held_bytes == 48); // no ACK owed: only the stream's record is held
}

TEST_CASE("a spent stream record pool refuses posts and defers messages until one is returned", "[state]")
{
    transport_config t;
    t.paths = 4;
    endpoint_config a = pair_harness::config(pair_harness::k_addr_a, t, 11);
    endpoint_config b = pair_harness::config(pair_harness::k_addr_b, t, 22);
    a.stream_blocks = 2;
    b.stream_blocks = 1;
    pair_harness h(a, b, 1000);
    const conn_id c1 = h.connect();
    const conn_id c2 = h.connect();
    buffer src(h.a(), 64 * 1024, k_all_access, 5);
    buffer dst1(h.b(), 64 * 1024, k_all_access);
    buffer dst2(h.b(), 64 * 1024, k_all_access);
    // A: one record per connection's stream 0; a third stream finds none.
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src, dst1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, dst2, 2), h.now()) == post_result::ok);
    CHECK(h.a().post_send(c1, make_wr(wr_opcode::write, src, dst1, 3, 1), h.now()) == post_result::queue_full);
    CHECK(h.a().stats().slot_pool_waits == 1);
    // B: the first message to arrive takes the only record; the other waits (RNR) until
    // the connection holding it goes.
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 1; }));
    const uint64_t first = h.cq[0][0].wr_id;
    CHECK(h.cq[0][0].status == wc_status::success);
    h.run_until([] { return false; }, 2'000'000);
    CHECK(h.cq[0].size() == 1);
    CHECK(h.b().stats().slot_pool_waits > 0);
    CHECK((first == 1 ? dst1 : dst2).bytes == src.bytes);
    const conn_id done = first == 1 ? c1 : c2;
    h.a().close(done, h.now());
    REQUIRE(h.run_until([&] { return !h.a().inspect(done) && h.cq[0].size() == 2; }));
    CHECK(h.cq[0][1].wr_id == 3 - first);
    CHECK(h.cq[0][1].status == wc_status::success);
    CHECK(dst1.bytes == src.bytes);
    CHECK(dst2.bytes == src.bytes);
}
