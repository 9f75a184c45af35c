// One metaroce-perf session's place in a run with several workers (-l with more than
// one lcore): each worker runs its own session (connections, control channel, region
// exchange, engine) over its own endpoint, and the main lcore sums their rows.
//   client worker k: qps / W (+1 for the first qps % W) connections to the server's
//                    worker k (dpdk::worker_addr(server, k));
//   server worker k: accepts what is dialled to its address; one that no client
//                    worker dials stops once every worker that got a client is done.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "report.hpp"

namespace metaroce::perf {

struct worker_share {
    uint16_t index = 0;                       // this session's worker
    uint16_t count = 1;                       // workers in the run (1: print as before)
    std::atomic<unsigned>* clients = nullptr;  // server: sessions a client came to
    std::atomic<unsigned>* finished = nullptr; // server: of those, the ones that ended
};

// What a session measured, for the main lcore to add up.
struct session_result {
    std::vector<bw_result> bw;
    std::vector<lat_result> lat;
    uint64_t bad = 0;      // bytes or lengths that did not verify
    bool served = false;   // server: a client came to this worker
};

// Rows of concurrent workers as one: iterations and bytes add up over the longest
// worker's time (conservative when they did not start together); peaks add up.
std::vector<bw_result> sum_bw_rows(const options& o, const std::vector<session_result>& parts);

} // namespace metaroce::perf
