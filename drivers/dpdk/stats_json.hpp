// Worker and transport counters as JSON: for the prompt, telemetry, --counters.
#pragma once

#include <nlohmann/json.hpp>

#include "dpdk/worker.hpp"

namespace metaroce::dpdk {

nlohmann::json to_json(const worker_counters& c);
nlohmann::json to_json(const counters& c);
nlohmann::json to_json(const conn_info& c, bool with_paths);

} // namespace metaroce::dpdk
