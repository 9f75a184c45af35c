#include "dpdk/node.hpp"

#include <sys/random.h>

#include <stdexcept>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpdk/eal.hpp"
#include "dpdk/flow_steer.hpp"
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
    if (p.workers == 0 || p.workers > k_max_workers ||
        ((p.node_addr >> 16) & 0xff) + p.workers > 256) {
        throw dpdk_error(std::to_string(p.workers) + " workers: need 1.." + std::to_string(k_max_workers) +
                         ", and the second octet of the address (" + format_ipv4(p.node_addr) +
                         ") plus the workers must stay below 256 (worker k uses address + k*65536)");
    }
    const uint32_t frame = max_frame(p.transport.mtu);
    const int socket = int(rte_socket_id());
    static int instance = 0;
    const int inst = instance++;
    // Every worker keeps RX/TX descriptors and a cache of its own: the pool grows with them.
    pool_ = make_mbuf_pool("mr_pool_" + std::to_string(inst), p.mbufs * p.workers, frame, socket);
    port_params pp;
    pp.max_frame = frame;
    pp.udp_checksum_software = p.udp_csum_software;
    pp.peer_wait_ms = p.peer_wait_ms;
    pp.zero_copy_tx = !p.tx_copy;
    pp.rx_queues = p.workers;
    pp.tx_queues = p.workers;
    worker_config wc;
    try {
        for (uint16_t port : p.ports) {
            caps_.push_back(setup_port(port, pp, pool_));
            const port_caps& c = caps_.back();
            if (c.rx_queues < p.workers || c.tx_queues < p.workers) {
                throw dpdk_error("port " + std::to_string(port) + " (" + c.name + ") offers " +
                                 std::to_string(c.rx_queues) + " RX / " + std::to_string(c.tx_queues) +
                                 " TX queues; " + std::to_string(p.workers) +
                                 " workers need one pair each (use fewer lcores)");
            }
            plane_port plane;
            plane.port_id = port;
            plane.mac = c.mac;
            plane.tx_csum = c.tx_csum;
            plane.rx_ip_csum = c.rx_ip_csum;
            plane.rx_udp_csum = c.rx_udp_csum;
            plane.multi_seg = c.multi_seg_tx;
            const size_t idx = wc.planes.size();
            if (idx < p.gateways.size() && p.gateways[idx]) {
                plane.routed = true;
                plane.gateway = *p.gateways[idx];
            }
            wc.planes.push_back(plane);
        }
        steer(p);
        wc.ep.accept_incoming = p.accept_incoming;
        wc.ep.max_connections = p.max_connections;
        wc.ep.record_chunks = p.record_chunks;
        wc.ep.frame_overhead_bytes = uint32_t(k_wire_overhead);
        wc.ep.transport = p.transport;
        wc.ep.transport.planes = uint8_t(p.ports.size());
        capacity_ = resolve_capacity(caps_, p.inbound_capacity_mbps);
        wc.ep.inbound_capacity_mbps = capacity_.mbps / p.workers; // each worker is a node
        wc.neighbors = p.neighbors;
        wc.pool = pool_;
        wc.admin = p.admin;
        const uint64_t seed = p.seed != 0 ? p.seed : os_random_seed();
        for (uint16_t k = 0; k < p.workers; ++k) {
            wc.ep.local_addr = worker_addr(p.node_addr, k);
            // Distinct per worker (ids, ISNs, cookies), still reproducible from a given seed.
            wc.ep.seed = k == 0 ? seed : (p.seed != 0 ? seed + k * 0x9e3779b97f4a7c15ull : os_random_seed());
            wc.queue = k;
            wc.inbox = p.workers > 1 ? inboxes_[k] : nullptr;
            wc.steering.clear();
            for (uint16_t j = 0; j < p.workers; ++j) {
                if (j != k) {
                    wc.steering.push_back({worker_addr(p.node_addr, j), inboxes_[j]});
                }
            }
            workers_.push_back(std::make_unique<worker>(wc));
        }
    } catch (...) {
        release();
        throw;
    }
}

// Inbox rings for the hand-off, and rte_flow rules where the ports take them.
void node::steer(const node_params& p)
{
    static int instance = 0;
    const int inst = instance++;
    for (uint16_t k = 0; p.workers > 1 && k < p.workers; ++k) {
        const std::string name = "mr_inbox_" + std::to_string(inst) + "_" + std::to_string(k);
        rte_ring* r = rte_ring_create(name.c_str(), k_inbox_slots, int(rte_socket_id()), RING_F_SC_DEQ);
        if (r == nullptr) {
            throw dpdk_error("cannot create hand-off ring " + name + ": " + rte_error_string(rte_errno));
        }
        inboxes_.push_back(r);
    }
    for (size_t i = 0; i < caps_.size(); ++i) {
        std::vector<flow_target> targets;
        for (uint16_t k = 0; p.workers > 1 && k < p.workers; ++k) {
            targets.push_back({plane_ip(worker_addr(p.node_addr, k), uint8_t(i)), k});
        }
        std::string why;
        steered_.push_back(!targets.empty() && install_flow_steering(caps_[i].port_id, targets, why));
    }
}

void node::release() noexcept
{
    workers_.clear();
    for (size_t i = 0; i < caps_.size(); ++i) {
        if (i < steered_.size() && steered_[i]) {
            remove_flow_steering(caps_[i].port_id);
        }
        stop_port(caps_[i].port_id);
    }
    free_inboxes();
    rte_mempool_free(pool_);
}

void node::free_inboxes() noexcept
{
    for (rte_ring* r : inboxes_) {
        void* m = nullptr;
        while (rte_ring_sc_dequeue(r, &m) == 0) {
            rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
        }
        rte_ring_free(r);
    }
    inboxes_.clear();
}

node::~node()
{
    workers_.clear();
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
    for (size_t i = 0; i < caps_.size(); ++i) {
        if (steered_[i]) {
            remove_flow_steering(caps_[i].port_id);
        }
        stop_port(caps_[i].port_id);
    }
    free_inboxes();
    // The pool is left to rte_eal_cleanup(): a PMD's interrupt thread (memif on
    // peer disconnect) may still be releasing its queues while we get here.
}

} // namespace metaroce::dpdk
