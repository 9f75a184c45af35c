// One node's DPDK resources: its plane ports, an mbuf pool and the worker that
// serves them. It runs nothing itself: the program that owns the lcore calls
// w().poll() (the metaroce app's datapath lcore, metaroce-perf's main loop, tests).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dpdk/port.hpp"
#include "dpdk/worker.hpp"
#include "metaroce/config.hpp"

namespace metaroce::dpdk {

struct node_params {
    uint32_t node_addr = 0;           // plane-0 IPv4, host order
    std::vector<uint16_t> ports;      // one per plane, in plane order
    transport_config transport;
    bool accept_incoming = true;
    uint64_t seed = 0;             // 0: from the OS (getrandom), as spec 7.9 requires
    uint32_t mbufs = 8191;            // per node
    bool udp_csum_software = false;
    uint32_t peer_wait_ms = 5000;     // memif client ports: how long to wait for the server
    std::vector<static_neighbor> neighbors;
    // Index = plane; a MAC: the plane is routed, every frame goes to that next hop.
    // Missing or nullopt: on-link (static, learned or broadcast peer MACs).
    std::vector<std::optional<mac_addr>> gateways;
    const plane_admin* admin = nullptr;
    uint32_t max_connections = 1024;
};

class node {
public:
    explicit node(const node_params& p);
    ~node();
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    worker& w() noexcept { return *worker_; }
    const std::vector<port_caps>& ports() const noexcept { return caps_; }
    // Largest Ethernet frame the transport sends with this MTU.
    static uint32_t max_frame(uint16_t mtu) noexcept;

private:
    std::vector<port_caps> caps_;
    rte_mempool* pool_ = nullptr;
    std::unique_ptr<worker> worker_;
};

} // namespace metaroce::dpdk
