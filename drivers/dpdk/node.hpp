// One process's DPDK resources: its plane ports, an mbuf pool and the workers that
// serve them. It runs nothing itself: the program that owns the lcores calls
// w(k).poll() on worker k's lcore (the metaroce app's datapath lcores, metaroce-perf's
// loops, tests).
//
// Many workers, shared nothing: worker k is its own node with its own endpoint, its
// own RX/TX queue pair k on every plane port and its own address,
//     worker_addr(node_addr, k) = node_addr + k * 65536   (10.0.0.1 -> 10.1.0.1)
// so a plane-p address reads 10.<worker>.<plane>.<host>. Frames for worker k reach
// queue k by an rte_flow rule on the destination IPv4 where the port takes one
// (flow_steer.hpp); elsewhere (memif, ring, af_packet) they land on whatever queue
// the peer or the PMD chose and the worker polling it hands them to worker k's
// inbox ring (worker.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dpdk/link_capacity.hpp"
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
    bool tx_copy = false;             // copy payloads into mbufs even where ports take chains
    uint32_t peer_wait_ms = 5000;     // memif client ports: how long to wait for the server
    std::vector<static_neighbor> neighbors;
    // Index = plane; a MAC: the plane is routed, every frame goes to that next hop.
    // Missing or nullopt: on-link (static, learned or broadcast peer MACs).
    std::vector<std::optional<mac_addr>> gateways;
    const plane_admin* admin = nullptr;
    uint32_t max_connections = 1024;
    uint32_t record_chunks = 4096;       // per worker's endpoint (endpoint_config::record_chunks)
    uint16_t workers = 1;             // queue pairs per port, endpoints, addresses
    // Receiver rate hints: inbound capacity in Mb/s, all planes; 0 off; nullopt: the
    // link speeds where ports are real (link_capacity.hpp). Split evenly over workers.
    std::optional<uint64_t> inbound_capacity_mbps;
};

// Plane-0 address of worker k of the node at `node_addr`.
constexpr uint32_t worker_addr(uint32_t node_addr, uint16_t k) noexcept
{
    return node_addr + (uint32_t(k) << 16);
}
inline constexpr uint16_t k_max_workers = 64;
inline constexpr unsigned k_inbox_slots = 4096; // hand-off ring per worker (power of 2)

class node {
public:
    explicit node(const node_params& p);
    ~node();
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    worker& w(size_t k = 0) noexcept { return *workers_[k]; }
    size_t workers() const noexcept { return workers_.size(); }
    // Per port: true when rte_flow steers each worker's frames to its queue.
    const std::vector<bool>& flow_steered() const noexcept { return steered_; }
    const std::vector<port_caps>& ports() const noexcept { return caps_; }
    // The inbound capacity the rate hints split, and where it came from.
    const link_capacity& capacity() const noexcept { return capacity_; }
    // Largest Ethernet frame the transport sends with this MTU.
    static uint32_t max_frame(uint16_t mtu) noexcept;

private:
    std::vector<port_caps> caps_;
    rte_mempool* pool_ = nullptr;
    std::vector<std::unique_ptr<worker>> workers_;
    std::vector<rte_ring*> inboxes_; // one per worker, when there are several
    std::vector<bool> steered_;
    link_capacity capacity_;
    void steer(const node_params& p);
    void release() noexcept;
    void free_inboxes() noexcept;
};

} // namespace metaroce::dpdk
