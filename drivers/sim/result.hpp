// What a run reports. to_json() is the stdout format doc/model.md describes; only
// wall_time_s and events_per_second differ between two runs of the same input.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "metaroce/counters.hpp"
#include "sim/event_queue.hpp"
#include "sim/fabric.hpp"
#include "sim/workload.hpp"

namespace metaroce::sim {

struct fct_summary {
    double p50_us = 0;
    double p99_us = 0;
    double max_us = 0;
};

struct queue_summary {
    uint64_t peak_switch_bytes = 0;    // any switch egress port
    uint64_t peak_last_hop_bytes = 0;  // leaf -> sink host ports
    double steady_last_hop_bytes = 0;  // mean of per-bin samples, second half of the run
    uint64_t bdp_bytes = 0;            // one link x base RTT
};

struct recovery_summary {
    double fault_at_us = 0;
    double before_gbps = 0;            // mean over the second half before the fault
    double target_gbps = 0;            // (P-1)/P of before_gbps
    double after_gbps = 0;             // mean from fault + 1 ms (or the fault) to the end
    double min_gbps = 0;               // lowest moving average after the fault
    std::optional<double> time_to_recover_us;
};

struct victim_summary {
    double gbps = 0;                   // placed while the incast ran
    uint64_t bytes = 0;
    uint64_t completed = 0;
    uint64_t verified = 0;
};

// One long-haul link (scale-across): what it carried, so a run shows whether paths
// moved off the slow or congested routes.
struct route_summary {
    uint32_t plane = 0;
    uint32_t spine = 0;
    uint32_t from_site = 0;
    double gbps = 0;
    uint64_t tx_bytes = 0;
    uint64_t ecn_marked = 0;
    uint64_t buffer_drops = 0;
    uint64_t max_backlog_bytes = 0;
};

// How evenly the fabric's links carried the traffic: bytes sent per plane (host
// ports), and the busiest leaf-spine and host port against the mean of their kind.
struct spread_summary {
    std::vector<uint64_t> plane_tx_bytes;
    double leaf_up_max_over_mean = 0;   // 0 without spines
    double host_up_max_over_mean = 0;   // over the host ports that sent anything
    // For --breakdown: wire bytes per leaf-spine link [plane][leaf][spine] and per host
    // port [plane][host].
    std::vector<std::vector<std::vector<uint64_t>>> leaf_up_bytes;
    std::vector<std::vector<uint64_t>> host_up_bytes;
};

struct timeline_data {
    double interval_us = 0;
    std::vector<uint64_t> bytes;                  // per bin
    std::vector<std::vector<uint64_t>> plane_bytes; // [plane][bin]
    std::vector<uint64_t> last_hop_queue_bytes;   // per bin
};

struct sim_result {
    std::string name;
    std::string protocol;
    uint64_t seed = 0;
    std::string stop_reason;      // done, duration, time_limit, idle
    bool completed = false;
    bool data_verified = false;
    double goodput_gbps = 0;
    double loss_free_bound_gbps = 0;
    fct_summary fct;
    uint64_t connections = 0;
    workload_stats work;          // fct samples are dropped once summarized
    fabric_stats net;
    counters hosts;               // summed over every endpoint
    uint64_t bad_tx_frames = 0;
    uint64_t peak_packets_in_flight = 0;
    double virtual_time_us = 0;
    double wall_time_s = 0;
    uint64_t events = 0;
    std::array<uint64_t, k_event_kinds> events_by_kind{};
    double events_per_second = 0;

    // Issue 4 metrics (analysis.cpp).
    double base_rtt_us = 0;
    double completion_time_us = 0;     // last completion - first post
    std::optional<double> jain_index;  // per-sender goodput while every sender is active
    std::optional<double> convergence_rtts;           // from the last sender's start
    std::optional<double> convergence_from_post_rtts; // from the first post (set-up included)
    double convergence_window_rtts = 0;
    queue_summary queue;
    std::optional<victim_summary> victim;
    std::optional<recovery_summary> recovery;
    timeline_data timeline;
    spread_summary spread;
    std::vector<route_summary> long_haul;
    uint64_t placed_bytes = 0;         // payload placed at receivers (sum of the timeline)
    double state_bytes_per_connection = 0;
    // What connections held of the hosts' shared pools at the busiest (metaroce: records,
    // message slots, send logs, READ jobs), per connection; 0 for a transport without.
    double pool_peak_bytes_per_connection = 0;
    double peak_rss_mb = 0;
    std::vector<std::pair<std::string, uint64_t>> transport_extra;

    uint64_t connection_errors() const noexcept
    {
        return work.conn_error_events + work.error_completions + work.connect_failures;
    }
};

fct_summary summarize_fct(std::vector<double> samples);
void accumulate(counters& into, const counters& c) noexcept;
nlohmann::ordered_json to_json(const sim_result& r);

} // namespace metaroce::sim
