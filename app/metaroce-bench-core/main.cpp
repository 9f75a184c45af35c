// metaroce-bench-core: the per-packet cost of the protocol core alone. Two
// endpoints in one process exchange 4 KiB WRITE packets, ACKs and SACKs with no
// I/O and a fake clock. Prints wall ns per data packet (informational: it depends
// on the machine) and the packet counts; scripts/core-budget.sh runs it under
// callgrind for instructions per packet, which do not. --pings N runs a ping-pong of
// N small SENDs instead (send_lat's workload): ns and packets per round trip.
//   metaroce-bench-core [--paths N] [--bytes N[K|M|G]] [--pings N [--ping-bytes B]] [--json]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core_bench.hpp"

namespace {

bool parse_size(const char* s, uint64_t& out)
{
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (end == s) {
        return false;
    }
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k') {
        mul = 1ull << 10;
        ++end;
    } else if (*end == 'M' || *end == 'm') {
        mul = 1ull << 20;
        ++end;
    } else if (*end == 'G' || *end == 'g') {
        mul = 1ull << 30;
        ++end;
    }
    if (*end != '\0' || v == 0) {
        return false;
    }
    out = uint64_t(v) * mul;
    return true;
}

int usage()
{
    std::fprintf(stderr, "usage: metaroce-bench-core [--paths N] [--bytes N[K|M|G]] [--pings N [--ping-bytes B]] "
                         "[--json]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    metaroce::bench::core_bench_options o;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        uint64_t v = 0;
        if (a == "--json") {
            json = true;
        } else if (a == "--paths" && i + 1 < argc && parse_size(argv[i + 1], v) && v <= 256) {
            o.paths = uint16_t(v);
            ++i;
        } else if (a == "--bytes" && i + 1 < argc && parse_size(argv[i + 1], v) && v <= (1ull << 36)) {
            o.bytes = v;
            ++i;
        } else if (a == "--pings" && i + 1 < argc && parse_size(argv[i + 1], v) && v <= 100'000'000) {
            o.pings = uint32_t(v);
            ++i;
        } else if (a == "--ping-bytes" && i + 1 < argc && parse_size(argv[i + 1], v) && v <= 65536) {
            o.ping_bytes = uint32_t(v);
            ++i;
        } else if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else {
            return usage();
        }
    }
    metaroce::bench::core_bench b(o);
    if (!b.connect()) {
        std::fprintf(stderr, "bench-core: the handshake did not finish\n");
        return 1;
    }
    if (o.pings != 0) {
        const metaroce::bench::core_bench_result r = b.ping_pong();
        if (!r.ok) {
            std::fprintf(stderr, "bench-core: %s\n", r.error.c_str());
            return 1;
        }
        const double ns = double(r.wall_ns) / double(r.round_trips);
        if (json) {
            std::printf("{\"core_ns_per_round_trip\": %.1f, \"paths\": %u, \"ping_bytes\": %u, \"round_trips\": %llu, "
                        "\"packets\": %llu, \"acks\": %llu, \"retransmits\": %llu}\n",
                        ns, unsigned(o.paths), o.ping_bytes, (unsigned long long)r.round_trips,
                        (unsigned long long)r.data_packets, (unsigned long long)r.acks,
                        (unsigned long long)r.retransmits);
        } else {
            std::printf("paths %u, %llu round trips of %u B SENDs, echoes verified: %llu data packets, %llu ACKs, "
                        "%llu retransmits\n",
                        unsigned(o.paths), (unsigned long long)r.round_trips, o.ping_bytes,
                        (unsigned long long)r.data_packets, (unsigned long long)r.acks,
                        (unsigned long long)r.retransmits);
            std::printf("%.1f ns per round trip (wall, both endpoints)\n", ns);
        }
        return 0;
    }
    const metaroce::bench::core_bench_result r = b.transfer();
    if (!r.ok) {
        std::fprintf(stderr, "bench-core: %s\n", r.error.c_str());
        return 1;
    }
    if (!b.verify()) {
        std::fprintf(stderr, "bench-core: the landed bytes differ from the source\n");
        return 1;
    }
    const double ns = r.data_packets ? double(r.wall_ns) / double(r.data_packets) : 0.0;
    if (json) {
        std::printf("{\"core_ns_per_packet\": %.1f, \"paths\": %u, \"bytes\": %llu, \"packets\": %llu, "
                    "\"acks\": %llu, \"retransmits\": %llu}\n",
                    ns, unsigned(o.paths), (unsigned long long)o.bytes, (unsigned long long)r.data_packets,
                    (unsigned long long)r.acks, (unsigned long long)r.retransmits);
    } else {
        std::printf("paths %u, %llu bytes: %llu data packets, %llu ACKs, %llu retransmits\n",
                    unsigned(o.paths), (unsigned long long)o.bytes, (unsigned long long)r.data_packets,
                    (unsigned long long)r.acks, (unsigned long long)r.retransmits);
        std::printf("%.1f ns per data packet (wall, both endpoints, copies included)\n", ns);
    }
    return 0;
}
