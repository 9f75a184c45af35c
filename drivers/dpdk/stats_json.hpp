// Worker and transport counters as JSON: for the prompt, telemetry, --counters.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "dpdk/worker.hpp"

namespace metaroce::dpdk {

// The core's path state as text, whichever set of states the core has (the
// path model grows with the congestion-control work).
template <typename State>
std::string path_state_name(State s)
{
    if constexpr (requires { to_string(s); }) {
        return std::string(to_string(s));
    } else {
        return static_cast<int>(s) == 0 ? "active" : "suspect";
    }
}

nlohmann::json to_json(const worker_counters& c);
// Per-stage loop timing (stage_timing.hpp): calls, items, ns total/per call/per item.
nlohmann::json to_json(const stage_times& t);
// The plane event log; wall_offset_ns = CLOCK_REALTIME ns - tsc_clock ns, taken now.
nlohmann::json to_json(const plane_log& log, size_t planes, int64_t wall_offset_ns);
nlohmann::json to_json(const counters& c);
nlohmann::json to_json(const conn_info& c, bool with_paths);

} // namespace metaroce::dpdk
