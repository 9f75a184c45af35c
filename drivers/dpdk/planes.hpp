// Planes and addressing. A plane is a port; a node (one endpoint) has one IPv4
// address per plane, derived from its plane-0 address, so no ARP is needed:
//     plane_ip(node, p) = node + p * 256   (10.0.0.1 -> 10.0.1.1 on plane 1)
// Peer MACs come from the configuration or are learned from received frames;
// until then frames go to the broadcast MAC (point-to-point links, L2 fabrics).
// On a routed plane every frame goes to the plane's gateway (next-hop router) MAC.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "dpdk/encap.hpp"
#include "dpdk/net_headers.hpp"

namespace metaroce::dpdk {

inline constexpr uint32_t k_max_planes = 8;

constexpr uint32_t plane_ip(uint32_t node, uint8_t plane) noexcept
{
    return node + (uint32_t(plane) << 8);
}
constexpr uint32_t node_of(uint32_t ip, uint8_t plane) noexcept
{
    return ip - (uint32_t(plane) << 8);
}

// One plane as a worker sees it: the port and what the port computes for us.
struct plane_port {
    uint16_t port_id = 0;
    mac_addr mac{};
    tx_csum_mode tx_csum;
    bool rx_ip_csum = false;
    bool rx_udp_csum = false;
    bool multi_seg = false;  // takes chained mbufs: zero-copy sends (extbuf.hpp)
    bool routed = false;     // send every frame to `gateway` (routers drop broadcasts)
    mac_addr gateway{};
};

struct static_neighbor {
    uint32_t node = 0;
    uint8_t plane = 0;
    mac_addr mac{};
};

// Administrative plane state, written by the control plane, read by every lcore
// once per burst (relaxed loads: a plane going down a few bursts late is fine).
struct plane_admin {
    std::array<std::atomic<bool>, k_max_planes> up;
    plane_admin()
    {
        for (auto& u : up) {
            u.store(true, std::memory_order_relaxed);
        }
    }
};

// Per-worker neighbour cache: node address -> MAC, one table per plane. Small and
// linear: a worker talks to few peers, and the last hit is checked first.
class neighbor_table {
public:
    void set(uint32_t node, const mac_addr& mac, bool pinned);
    void learn(uint32_t node, const mac_addr& mac)
    {
        if (last_ < entries_.size() && entries_[last_].node == node) {
            if (!entries_[last_].pinned) {
                entries_[last_].mac = mac;
            }
            return;
        }
        set(node, mac, false);
    }
    const mac_addr& lookup(uint32_t node) noexcept
    {
        if (last_ < entries_.size() && entries_[last_].node == node) {
            return entries_[last_].mac;
        }
        for (size_t i = 0; i < entries_.size(); ++i) {
            if (entries_[i].node == node) {
                last_ = i;
                return entries_[i].mac;
            }
        }
        return k_broadcast_mac;
    }
    size_t size() const noexcept { return entries_.size(); }

private:
    struct entry {
        uint32_t node;
        mac_addr mac;
        bool pinned;
    };
    std::vector<entry> entries_;
    size_t last_ = 0;
};

} // namespace metaroce::dpdk
