#include "dpdk/node.hpp"

#include <sys/random.h>

#include <stdexcept>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mempool.h>

#include "dpdk/eal.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::dpdk {

namespace {

// Ids, nonces, ISNs, tokens and the cookie key derive from the seed: on a real network it
// must be unpredictable (spec 7.9).
uint64_t os_random_seed()
{
    uint64_t seed = 0;
    while (seed == 0) {
        if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) {
            throw std::runtime_error("getrandom failed: cannot seed the endpoint");
        }
    }
    return seed;
}

} // namespace

uint32_t node::max_frame(uint16_t mtu) noexcept
{
    return uint32_t(k_frame_overhead + wire::max_packet_len(mtu));
}

node::node(const node_params& p)
{
    if (p.ports.empty() || p.ports.size() > k_max_planes) {
        throw dpdk_error("need 1.." + std::to_string(k_max_planes) + " ports, got " +
                         std::to_string(p.ports.size()));
    }
    if (p.gateways.size() > p.ports.size()) {
        throw dpdk_error(std::to_string(p.gateways.size()) + " gateways for " +
                         std::to_string(p.ports.size()) + " plane(s): at most one per plane");
    }
    const uint32_t frame = max_frame(p.transport.mtu);
    const int socket = int(rte_socket_id());
    static int instance = 0;
    pool_ = make_mbuf_pool("mr_pool_" + std::to_string(instance++), p.mbufs, frame, socket);
    port_params pp;
    pp.max_frame = frame;
    pp.udp_checksum_software = p.udp_csum_software;
    pp.peer_wait_ms = p.peer_wait_ms;
    worker_config wc;
    try {
        for (uint16_t port : p.ports) {
            caps_.push_back(setup_port(port, pp, pool_));
            const port_caps& c = caps_.back();
            plane_port plane;
            plane.port_id = port;
            plane.mac = c.mac;
            plane.tx_csum = c.tx_csum;
            plane.rx_ip_csum = c.rx_ip_csum;
            plane.rx_udp_csum = c.rx_udp_csum;
            const size_t idx = wc.planes.size();
            if (idx < p.gateways.size() && p.gateways[idx]) {
                plane.routed = true;
                plane.gateway = *p.gateways[idx];
            }
            wc.planes.push_back(plane);
        }
        wc.ep.local_addr = p.node_addr;
        wc.ep.accept_incoming = p.accept_incoming;
        wc.ep.seed = p.seed != 0 ? p.seed : os_random_seed();
        wc.ep.max_connections = p.max_connections;
        wc.ep.frame_overhead_bytes = uint32_t(k_wire_overhead);
        wc.ep.transport = p.transport;
        wc.ep.transport.planes = uint8_t(p.ports.size());
        wc.neighbors = p.neighbors;
        wc.pool = pool_;
        wc.admin = p.admin;
        worker_ = std::make_unique<worker>(wc);
    } catch (...) {
        for (const auto& c : caps_) {
            stop_port(c.port_id);
        }
        rte_mempool_free(pool_);
        throw;
    }
}

node::~node()
{
    worker_.reset();
    // Let a peer that is going away disconnect first: memif's interrupt thread handles a
    // peer's disconnect by touching the queues, and closing the port under it crashed the
    // process at exit. Wait (bounded) for the links to drop, then a moment more.
    const uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() * 3 / 10;
    bool any_up = true;
    while (any_up && rte_get_timer_cycles() < deadline) {
        any_up = false;
        for (const auto& c : caps_) {
            any_up = any_up || port_link_up(c.port_id);
        }
        if (any_up) {
            rte_delay_ms(5);
        }
    }
    rte_delay_ms(20);
    for (const auto& c : caps_) {
        stop_port(c.port_id);
    }
    // The pool is left to rte_eal_cleanup(): a PMD's interrupt thread (memif on
    // peer disconnect) may still be releasing its queues while we get here.
}

} // namespace metaroce::dpdk
