// What a run reports. to_json() is the stdout format doc/model.md describes; only
// wall_time_s and events_per_second differ between two runs of the same input.
#pragma once

#include <array>
#include <cstdint>
#include <string>

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

struct sim_result {
    std::string name;
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

    uint64_t connection_errors() const noexcept
    {
        return work.conn_error_events + work.error_completions + work.connect_failures;
    }
};

fct_summary summarize_fct(std::vector<double> samples);
void accumulate(counters& into, const counters& c) noexcept;
nlohmann::ordered_json to_json(const sim_result& r);

} // namespace metaroce::sim
