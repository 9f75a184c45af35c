// Figures derived from a run's time series: base RTT, Jain index, convergence to
// fair share, last-hop queues, victim throughput and recovery after a plane failure.
#pragma once

#include "sim/fabric.hpp"
#include "sim/metrics.hpp"
#include "sim/result.hpp"
#include "sim/scenario.hpp"

namespace metaroce::sim {

// Round trip of one full data packet and its ACK over the longest path the pattern
// uses, with empty queues: 2 x hops x link delay + hops x (data + ACK serialization).
double base_rtt_ns(const scenario& s);

// Fills the metric fields of r from the meter and the fabric.
void analyze(const scenario& s, const goodput_meter& m, const fabric& net, sim_result& r);

} // namespace metaroce::sim
