// metaroce-perf with several workers (-l with more than one lcore): one session per
// worker, worker 0 on the main lcore, the others on the EAL's worker lcores; the main
// lcore then prints the summed rows, the verification and the JSON (worker_share.hpp).
#pragma once

#include "dpdk/node.hpp"
#include "options.hpp"
#include "report.hpp"

namespace metaroce::perf {

// Returns the process exit code; throws what a worker's session threw first.
int run_workers(dpdk::node& n, const options& o, const run_info& info);

} // namespace metaroce::perf
