// Who sends to whom. pairs: host i -> (i + H/2) % H for i < senders; incast:
// hosts 1..senders -> host 0; alltoall: each of the first `senders` hosts to every
// other host. Each pair carries workload.connections connections.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/scenario.hpp"

namespace metaroce::sim {

// (initiator, target) per connection, in a fixed order.
std::vector<std::pair<uint32_t, uint32_t>> plan_connections(const scenario& s);

// Line rate the workload could reach with no loss: the smaller side of the data
// flow (distinct sources vs distinct sinks) at planes x link rate per host, times
// the share of each wire byte that is payload (Ethernet/IP/UDP/FCS/IFG + transport
// data headers counted per packet).
double loss_free_bound_gbps(const scenario& s);

} // namespace metaroce::sim
