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
