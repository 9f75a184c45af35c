// The app's DPDK telemetry endpoints (/metaroce/...), read with dpdk-telemetry.py.
// DPDK 22.11 replies are a dict of scalars and arrays of scalars (one level of nesting,
// at most 256 entries, arrays of at most 512): lists of objects (paths, planes,
// connections) go out as one array per field, nested objects as '/'-joined keys, and
// long lists page, so a reply is never cut.
#pragma once

#include <nlohmann/json.hpp>

struct rte_tel_data;

namespace metaroce::app {

class application;

// Registers every endpoint; the application must outlive the telemetry thread's use.
void register_telemetry(application& app);
void detach_telemetry();

// Fills `d` from `j` (an object) as described above. Returns 0, or -E2BIG if it
// would not fit in one reply (the caller pages instead of cutting).
int to_telemetry(rte_tel_data* d, const nlohmann::json& j);

// Connections per page of /metaroce/conns (one array per field, each under the limit).
inline constexpr size_t k_conns_page = 256;

} // namespace metaroce::app
