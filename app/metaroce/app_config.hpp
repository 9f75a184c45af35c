// The metaroce app's JSON configuration (config/*.json): ports and planes, this
// node's address, static peers, datapath lcores and transport parameters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpdk/planes.hpp"
#include "metaroce/config.hpp"

namespace metaroce::app {

struct app_config {
    uint32_t address = 0x0a000001;         // node (plane-0) IPv4
    std::vector<uint16_t> ports{0};        // index = plane
    // index = plane; a MAC: routed plane, every frame goes to that next hop
    std::vector<std::optional<dpdk::mac_addr>> gateways;
    std::vector<unsigned> lcores;          // datapath lcores; empty: the first worker lcore
    std::vector<dpdk::static_neighbor> peers;
    transport_config transport;
    uint32_t mbufs = 8191;
    uint32_t max_connections = 1024;
    uint32_t record_chunks = 4096;         // in-flight packet records, chunks of 16 (core pool)
    // "inbound_capacity_mbps": receiver rate hints' capacity, Mb/s, 0 off; absent or
    // "auto": the link speed, off on virtual PMDs (dpdk/link_capacity.hpp).
    std::optional<uint64_t> inbound_capacity_mbps;
    bool udp_checksum_software = false;
    bool tx_copy = false; // "tx_copy": payloads copied into mbufs, never sent in place
    uint64_t message_size = 65536;         // for the forwarding engines
    uint32_t tx_depth = 64;
    // "backend": "udp" (or --backend udp): kernel UDP sockets on the planes' addresses
    // (plane_ip(address, p), one plane per "ports" entry) instead of DPDK ports.
    bool udp = false;
    bool yield_idle = false; // --yield-idle: an idle datapath lane yields its CPU (shared cores)
    uint16_t udp_port = 4796;              // "udp_port": listen/destination port on udp
};

// Throws std::invalid_argument naming the file, the JSON path and what is wrong.
app_config load_config(const std::string& path);
app_config parse_config(const std::string& text, const std::string& origin);
// After EAL init: every configured port exists (else std::invalid_argument naming the
// key and, for a --vdev that failed to probe, why).
void check_ports(const app_config& c, const std::string& origin);
// For the udp backend: refuses what needs DPDK ports (gateways, static peers' MACs).
void check_udp(const app_config& c, const std::string& origin);

} // namespace metaroce::app
