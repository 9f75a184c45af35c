// One direction of a cable and the egress queue in front of it. The queue is not
// stored: a packet waits until busy_until, so the backlog is (busy_until - now)
// worth of bytes and each packet costs a single event per hop.
#pragma once

#include <cstdint>

#include "sim/sim_time.hpp"

namespace metaroce::sim {

enum class link_kind : uint8_t { host_up, host_down, leaf_up, spine_down, long_haul };

struct link_stats {
    uint64_t tx_packets = 0;
    uint64_t tx_bytes = 0;       // wire bytes
    uint64_t ecn_marked = 0;
    uint64_t buffer_drops = 0;
    uint64_t failure_drops = 0;
    uint64_t loss_drops = 0;     // loss model, on host_down links only
    uint64_t max_backlog_bytes = 0;
};

struct link {
    link_kind kind = link_kind::host_up;
    uint8_t plane = 0;
    uint32_t from = 0;           // host, leaf or spine index within the plane
    uint32_t to = 0;             // long_haul: the spine, from = 0 (site A to B) or 1
    double ps_per_byte = 80;     // 100 Gb/s
    sim_time delay = 0;
    uint64_t buffer_bytes = 0;   // 0: no limit (a host NIC, paced by its driver)
    uint64_t ecn_threshold = 0;  // 0: never mark
    sim_time busy_until = 0;
    bool failed = false;
    link_stats stats;

    uint64_t backlog_bytes(sim_time now) const noexcept
    {
        return busy_until > now ? uint64_t(double(busy_until - now) / ps_per_byte) : 0;
    }
    sim_time serialization(uint32_t bytes) const noexcept
    {
        return sim_time(double(bytes) * ps_per_byte + 0.5);
    }
};

} // namespace metaroce::sim
