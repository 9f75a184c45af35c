// Moves packets across the planes: egress queueing with ECN marking and tail drop
// at switch ports, ECMP at leaves, random loss on the last hop, failed planes and
// links. Schedules one arrival event per packet per hop; frees what it drops.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/loss_model.hpp"
#include "sim/packet_pool.hpp"
#include "sim/scenario.hpp"
#include "sim/topology.hpp"

namespace metaroce::sim {

struct fabric_stats {
    uint64_t injected = 0;
    uint64_t delivered = 0;
    uint64_t loss_drops = 0;
    uint64_t buffer_drops = 0;
    uint64_t failure_drops = 0;
    uint64_t ecn_marked = 0;

    uint64_t drops() const noexcept { return loss_drops + buffer_drops + failure_drops; }
};

enum class hop_result : uint8_t { forwarded, delivered, dropped };

class fabric {
public:
    fabric(const scenario& s, event_queue& q, packet_pool& pool);

    // The host put packet `pkt` (meta filled) on its NIC port for meta.plane.
    void transmit(uint32_t pkt, sim_time now);
    // Packet `pkt` reached the far end of link `link_id`. delivered: the caller owns
    // the packet and hands it to meta.dst_host.
    hop_result on_arrival(uint32_t pkt, uint32_t link_id, sim_time now);

    void apply(const fault_event& e);
    bool plane_failed(uint32_t plane) const noexcept { return plane_failed_[plane] != 0; }

    // When the host's NIC port on `plane` finishes sending what it holds.
    sim_time nic_busy_until(uint32_t host, uint32_t plane) const noexcept
    {
        return topo_.at(topo_.host_up(plane, host)).busy_until;
    }

    const topology& topo() const noexcept { return topo_; }
    const fabric_stats& stats() const noexcept { return stats_; }
    const loss_model& loss() const noexcept { return loss_; }

private:
    void enqueue(uint32_t pkt, uint32_t link_id, sim_time now);
    bool link_down(const link& l) const noexcept { return l.failed || plane_failed_[l.plane]; }
    void drop(uint32_t pkt) noexcept { pool_.free(pkt); }
    std::vector<uint32_t> fault_links(const fault_event& e) const;

    topology topo_;
    event_queue& q_;
    packet_pool& pool_;
    loss_model loss_;
    std::vector<uint8_t> plane_failed_;
    fabric_stats stats_;
};

} // namespace metaroce::sim
