// The node configuration of the Verbs front end, from the environment (set by
// metaroce-run) or a KEY=VALUE file named by METAROCE_CONFIG. Every key is documented
// in drivers/verbs/README.md; the environment overrides the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace metaroce::verbs {

struct settings {
    std::vector<uint32_t> plane_addrs; // METAROCE_ADDR; empty: first free 127.0.0.N
    uint16_t port = 4796;              // METAROCE_PORT
    std::string backend = "udp";       // METAROCE_BACKEND
    std::string eal;                   // METAROCE_EAL: EAL arguments (dpdk backend)
    std::vector<uint16_t> dpdk_ports;  // METAROCE_DPDK_PORTS; empty: 0..planes-1
    uint16_t mtu = 4096;               // METAROCE_MTU
    uint16_t paths = 16;               // METAROCE_PATHS
    uint16_t max_streams = 64;         // METAROCE_MAX_STREAMS: QPs per peer + 1
    uint32_t min_rto_us = 0;           // METAROCE_MIN_RTO_US; 0: the backend's default
    double test_drop_rate = 0;         // METAROCE_TEST_DROP (tests only)
    uint8_t log = 0;                   // METAROCE_LOG=1: connection and binding log on stderr;
                                       // 2: also every nonzero core counter at close
    std::string error;                 // non-empty: the configuration is unusable (why)
};

// Reads the configuration once per call (cheap; done at ibv_open_device).
settings load_settings();

std::string format_ipv4(uint32_t host_order);

} // namespace metaroce::verbs
