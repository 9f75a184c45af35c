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
    uint32_t ip = 0;     // printed as an IPv4-mapped GID, perftest's decimal %02d bytes
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

// When a bandwidth run's messages completed, for the peak. perftest's peak is the best
// window of iterations i..j, from the post of i to the completion of j. We log
// completions only, so the window runs from completion i to completion j and counts just
// the messages posted inside it: with at most `outstanding` messages in flight, message
// k is posted after completion k - outstanding, so messages i+outstanding+1 .. j crossed
// the wire within the window. That rate can never exceed the wire's.
struct bw_timing {
    static constexpr size_t k_max_points = 4096; // halved (every other kept) beyond this
    struct point {
        uint64_t count;  // messages completed so far
        uint64_t ns;
    };
    uint64_t start_ns = 0;
    uint64_t last_ns = 0;        // the last completion
    uint64_t outstanding = 1;    // messages in flight at most (tx depth x qps)
    uint64_t completed_msgs = 0;
    std::vector<point> points;
    bw_timing(uint64_t start, uint64_t max_outstanding);
    void completed(uint64_t now_ns, uint64_t messages);
    // Best message rate (messages per second) over any logged window; 0 if none qualifies.
    double peak_msgs_per_s() const;
};
// The client's row, from its own timing.
bw_result bw_row(const options& o, uint64_t size, uint64_t iters, const bw_timing& t);
// The server's row, from the client's elapsed time and peak (already in the unit).
bw_result bw_row(const options& o, uint64_t size, uint64_t iters, uint64_t elapsed_ns, double peak);

// The GID line's text for an IPv4 node address, as perftest prints an IPv4-mapped GID.
std::string gid_of(uint32_t ip);

// --output=...: one number per size instead of the table row.
void print_bw_number(const options& o, const bw_result& r);
void print_lat_number(const lat_result& r);

// " Data verification: ok|FAILED (N bytes differ)" when `checked`; with --output only a
// failure is printed, on stderr, so stdout stays one number per size.
void print_verification(const options& o, bool checked, uint64_t bad_bytes);

// -w/-y: prints why and returns false when a row is below the limit.
bool check_limits(const options& o, const std::vector<bw_result>& rows);

// Writes perftest's JSON (test_info + results) to FILE; false (and a message on stderr) on failure.
bool write_json(const std::string& path, const options& o, const run_info& info,
                const std::vector<bw_result>& bw, const std::vector<lat_result>& lat,
                bool verified, const std::string& verify_state);

} // namespace metaroce::perf
