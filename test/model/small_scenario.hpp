// Scaled-down scenarios for the model tests: 8 hosts on 2 planes, 2 leaves and 2
// spines per plane, 100 Gb/s links; small enough to run in well under a second.
#pragma once

#include "sim/scenario.hpp"
#include "sim/scenario_json.hpp"

namespace metaroce::sim::test {

inline scenario small_scenario(wr_opcode op = wr_opcode::write, loss_kind loss = loss_kind::none,
                               double rate = 0)
{
    scenario s;
    s.name = "model-test";
    s.seed = 7;
    s.topology.hosts = 8;
    s.topology.planes = 2;
    s.topology.hosts_per_leaf = 4;
    s.topology.spines_per_plane = 2;
    s.topology.link_delay_ns = 1000;
    s.transport.planes = 2;
    s.transport.paths = 8;
    s.loss.model = loss;
    s.loss.rate = rate;
    s.loss.burst = 4;
    s.workload.pattern = pattern_kind::pairs;
    s.workload.senders = 4;
    s.workload.op = op;
    s.workload.message_bytes = 65536;
    s.workload.messages = 24;
    s.workload.outstanding = 4;
    s.workload.streams = 2;
    validate(s);
    return s;
}

} // namespace metaroce::sim::test
