// perftest-style output: header block, address lines, result table, and JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "options.hpp"

namespace metaroce::perf {

struct address_line {
    uint32_t conn = 0;   // printed as QPN
    uint32_t psn = 0;
    uint32_t rkey = 0;
    uint64_t va = 0;
    uint32_t ip = 0;     // printed as an IPv4-mapped GID
};

struct bw_result {
    uint64_t bytes = 0;
    uint64_t iters = 0;
    double peak = 0;     // in the table's unit (Gb/s or MB/s)
    double avg = 0;
    double msg_rate_mpps = 0;
    double seconds = 0;
};

struct lat_result {
    uint64_t bytes = 0;
    uint64_t iters = 0;
    double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;
};

struct run_info {
    std::string device;  // port names
    std::string transport = "MetaRoCE";
    uint32_t planes = 1;
    uint32_t paths = 16;
    std::function<bool()> link_up;  // any plane port still linked to the peer
};

void print_header(const options& o, const run_info& info);
void print_addresses(const address_line& local, const address_line& remote);
void print_dashes();
void print_bw_title(const options& o);
void print_bw_row(const bw_result& r);
void print_lat_title();
void print_lat_row(const lat_result& r);

// Half-RTT samples in microseconds -> perftest's latency columns.
lat_result summarise_latency(uint64_t bytes, std::vector<double> half_rtt_us);

// When a bandwidth run's bytes completed: the peak is the best full 1 ms bin.
struct bw_timing {
    static constexpr uint64_t k_bin_ns = 1'000'000;
    uint64_t start_ns = 0;
    uint64_t last_ns = 0;       // the last completion
    std::vector<uint64_t> bins; // bytes completed per bin
    explicit bw_timing(uint64_t start) : start_ns(start), last_ns(start), bins(64, 0) {}
    void completed(uint64_t now_ns, uint64_t bytes);
};
// The client's row, from its own timing.
bw_result bw_row(const options& o, uint64_t size, uint64_t iters, const bw_timing& t);
// The server's row, from the client's elapsed time and peak (already in the unit).
bw_result bw_row(const options& o, uint64_t size, uint64_t iters, uint64_t elapsed_ns, double peak);

// Writes every row to FILE as JSON; false (and a message on stderr) on failure.
bool write_json(const std::string& path, const options& o, const run_info& info,
                const std::vector<bw_result>& bw, const std::vector<lat_result>& lat,
                bool verified, const std::string& verify_state);

} // namespace metaroce::perf
