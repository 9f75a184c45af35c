// Per-link figures of a finished run: how evenly planes and spines carried the traffic
// (plane scaling) and what each long-haul route carried (scale-across).
#pragma once

#include "sim/result.hpp"
#include "sim/scenario.hpp"
#include "sim/topology.hpp"

namespace metaroce::sim {

void summarize_links(const topology& topo, const long_haul_params& lh, sim_result& r);

} // namespace metaroce::sim
