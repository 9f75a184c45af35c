// Receiver rate hints on DPDK ports (spec 6.4): the node's inbound capacity, which the
// core splits among its senders, taken from the ports' link speeds.
//
// Virtual PMDs report speeds that say nothing about what they carry (net_memif and
// net_ring claim 10G while memif moves 100+ Gb/s between two cores; net_af_packet
// and net_tap report the kernel interface's, often none): hints from those would
// throttle senders far below the link, so on them hints stay off unless configured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpdk/port.hpp"

namespace metaroce::dpdk {

// What the node uses and why (for `show config`, --counters and logs).
struct link_capacity {
    uint64_t mbps = 0;     // 0: hints off
    std::string source;    // "configured", "link speed", or why it is off
};

// True for drivers whose reported speed is not the link's (see above).
bool virtual_pmd(const std::string& driver) noexcept;
// The port's negotiated speed in Mb/s; 0 when down, unknown or none.
uint64_t port_speed_mbps(uint16_t port_id) noexcept;
// configured: the operator's value (0 turns hints off); nullopt: the sum of the ports'
// link speeds, if every port is a real one with a known speed, else off.
link_capacity resolve_capacity(const std::vector<port_caps>& ports, std::optional<uint64_t> configured);

} // namespace metaroce::dpdk
