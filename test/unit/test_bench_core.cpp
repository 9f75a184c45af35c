// The core benchmark's harness (app/metaroce-bench-core) moves real bytes: a short
// run must land every byte of every WRITE, once, with no loss on its lossless wire.
#include <catch2/catch.hpp>

#include "core_bench.hpp"

using metaroce::bench::core_bench;
using metaroce::bench::core_bench_options;

TEST_CASE("bench-core lands every byte of its WRITEs", "[bench]")
{
    const uint16_t paths = GENERATE(uint16_t(1), uint16_t(16));
    core_bench_options o;
    o.paths = paths;
    o.msg_bytes = 256 * 1024;
    o.bytes = 2 * 1024 * 1024 + 5000; // the last WRITE ends in a short packet
    core_bench b(o);
    REQUIRE(b.connect());
    CHECK_FALSE(b.verify()); // nothing has moved yet: the check can fail
    const auto r = b.transfer();
    INFO("paths " << paths << ": " << r.error);
    REQUIRE(r.ok);
    CHECK(b.verify());
    const uint64_t full = o.bytes / 4096;
    CHECK(r.data_packets == full + 1); // 4 KiB packets and one of 5000 % 4096 bytes
    CHECK(r.retransmits == 0);
    CHECK(r.completions == o.bytes / o.msg_bytes + 1);
    CHECK(r.acks > 0);
    CHECK(r.acks <= r.data_packets);
}

TEST_CASE("bench-core's ping-pong echoes every ping back, one data packet each way", "[bench]")
{
    const uint32_t size = GENERATE(uint32_t(2), uint32_t(4096), uint32_t(10000));
    core_bench_options o;
    o.bytes = 1 << 20;
    o.pings = 200;
    o.ping_bytes = size;
    core_bench b(o);
    REQUIRE(b.connect());
    const auto r = b.ping_pong();
    INFO("size " << size << ": " << r.error);
    REQUIRE(r.ok);
    CHECK(r.round_trips == o.pings); // each echo compared with its ping inside
    const uint64_t pkts_per_msg = (size + 4095) / 4096;
    CHECK(r.data_packets == 2 * o.pings * pkts_per_msg);
    CHECK(r.retransmits == 0);
    CHECK(r.acks > 0);
}

TEST_CASE("bench-core's ping-pong refuses a ping that does not fit its buffers", "[bench]")
{
    core_bench_options o;
    o.bytes = 4096;
    o.pings = 1;
    o.ping_bytes = 4096; // ping and echo need twice that on the sending side
    core_bench b(o);
    REQUIRE(b.connect());
    const auto r = b.ping_pong();
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("too small") != std::string::npos);
}
