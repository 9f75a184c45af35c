// metaroce-perf options: perftest's flags and defaults, plus the transport's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpdk/net_headers.hpp"
#include "engines/test_kind.hpp"

namespace metaroce::perf {

using engines::test_kind;
using engines::test_name;

// perftest's --output: the full report or just one number per size.
enum class output_kind { full, bandwidth, latency, message_rate };

// --backend: DPDK ports (the EAL's) or kernel UDP sockets (drivers/udp).
enum class backend_kind { dpdk, udp };

// perftest writes JSON here when --out_json is given without --out_json_file.
inline constexpr const char* k_default_json_file = "perftest_out.json";

struct options {
    test_kind test = test_kind::write_bw;
    bool client = false;
    uint32_t server_addr = 0;      // client: the server's node address
    uint32_t local_addr = 0;       // 0: 10.0.0.1 (server) / 10.0.0.2 (client); udp: 127.0.0.x
    backend_kind backend = backend_kind::dpdk;
    uint64_t size = 0;             // 0: perftest default (65536 bw, 2 lat)
    bool all_sizes = false;        // -a: 2 B .. 8 MiB
    uint64_t iters = 0;            // 0: perftest default (5000 bw, 1000 lat)
    uint32_t duration_s = 0;       // -D: run for this long instead of -n
    uint32_t qps = 1;              // -q: connections
    uint32_t tx_depth = 0;         // -t: 0: 128 bw, 1 lat
    bool report_gbits = false;
    std::string out_json;          // the JSON file; empty: no JSON (--out_json[_file])
    bool no_peak = false;          // -N: perftest's "no peak" (prints 0)
    output_kind output = output_kind::full; // --output: one number instead of the table
    double limit_bw = 0;           // -w: fail (exit 1) below this average, in the table's unit
    double limit_msgrate = 0;      // -y: fail (exit 1) below this message rate, Mpps
    uint16_t paths = 16;
    uint8_t planes = 1;
    uint16_t mtu = 4096;
    bool verify = true;
    bool raw = false;              // --raw: frames without the transport (baseline)
    bool pdump = true;             // serve dpdk-dumpcap (--no-pdump: off)
    uint32_t timeout_s = 30;       // give up waiting for the peer
    bool udp_csum_sw = false;
    bool tx_copy = false;          // --tx-copy: no zero-copy sends (dpdk/extbuf.hpp)
    bool show_counters = false;
    uint32_t min_rto_us = 0;       // 0: the core's default
    uint32_t max_timeouts = 0;     // 0: the core's default
    std::vector<dpdk::mac_addr> gateways; // --gateway: next-hop MAC per plane (routed fabric)
    bool plane_log = false;        // --plane-log: plane events and per-plane frames at exit
    bool cross_workers = false;    // --cross-workers: client worker k dials server worker k+1
    bool yield_idle = false;       // --yield-idle: an idle worker sched_yields (shared cores)
    // --inbound-capacity: rate hints' capacity in Mb/s, 0 off; nullopt (auto): link speed
    std::optional<uint64_t> inbound_capacity_mbps;
    bool is_bw() const noexcept { return engines::is_bw(test); }
};

// perftest's title line, e.g. "RDMA_Write BW Test".
const char* test_title(test_kind t) noexcept;

// Parses argv after the EAL's options (argv[0] is the program). Throws
// std::invalid_argument with a precise message on bad input; returns nullopt
// after printing help.
std::optional<options> parse_options(int argc, char** argv);
void print_usage(const char* prog);

} // namespace metaroce::perf
