// One simulated node: a transport (the metaroce core or the RoCEv2 model) driven
// the way a NIC driver drives it.
// Received packets go in through on_packet(); packets come out through poll_tx()
// only while the NIC ports hold little, so the core keeps its own queues; timers
// and completions are polled after every interaction.
#pragma once

#include <array>
#include <cstdint>

#include <memory>

#include "common/endpoint_loop.hpp"
#include "sim/event_queue.hpp"
#include "sim/fabric.hpp"
#include "sim/metrics.hpp"
#include "sim/packet_pool.hpp"
#include "sim/scenario.hpp"
#include "sim/transport.hpp"

namespace metaroce::sim {

// Receives what the endpoint reports; the workload implements it.
class host_listener {
public:
    virtual ~host_listener() = default;
    virtual void on_completion(uint32_t host, const completion& c, sim_time now) = 0;
    virtual void on_conn_event(uint32_t host, const conn_event& e, sim_time now) = 0;
};

struct host_stats {
    uint64_t tx_pulls = 0;       // packets taken from the core
    uint64_t rx_delivered = 0;   // packets handed to the core
    uint64_t bad_tx_frames = 0;  // unknown destination or plane: dropped here
    uint64_t timer_calls = 0;
};

class host {
public:
    host(uint32_t index, const scenario& s, const host_load& load, event_queue& q, fabric& net,
         packet_pool& pool);

    uint32_t index() const noexcept { return index_; }
    sim_transport& ep() noexcept { return *ep_; }
    const sim_transport& ep() const noexcept { return *ep_; }
    void set_listener(host_listener* l) noexcept { listener_ = l; }
    // Receives the payload bytes each delivered packet placed.
    void set_meter(goodput_meter* m) noexcept { meter_ = m; }

    void on_packet(uint32_t pkt, sim_time now);
    void on_timer_event(sim_time scheduled, sim_time now);
    void on_tx_wake(sim_time scheduled, sim_time now);
    // After a post or connect from outside: send, poll, rearm the timer.
    void kick(sim_time now) { settle(now, false); }

    const host_stats& stats() const noexcept { return stats_; }

    // The packet I/O of the shared loop's pull (common/endpoint_loop.hpp): buffers come
    // from the packet pool while some NIC port is short of packets.
    std::span<uint8_t> tx_buffer(uint64_t now_ns) noexcept;
    void tx_unused() noexcept;
    uint32_t tx_busy_planes(uint64_t now_ns) const noexcept;
    io::tx_next tx_send(const tx_frame& f, uint64_t now_ns) noexcept;

private:
    void settle(sim_time now, bool after_timer);
    void drain(sim_time now);
    void pump_tx(sim_time now);
    sim_time egress_backlog(sim_time now) const noexcept; // of the fullest port
    sim_time drain_time(sim_time now) const noexcept;
    bool port_hungry(sim_time now) const noexcept;
    sim_time hungry_time(sim_time now) const noexcept;
    void arm_timer(sim_time now, bool after_timer);

    uint32_t index_;
    uint32_t planes_;
    uint32_t hosts_;
    std::unique_ptr<sim_transport> ep_;
    event_queue& q_;
    fabric& net_;
    packet_pool& pool_;
    host_listener* listener_ = nullptr;
    goodput_meter* meter_ = nullptr;
    sim_time pkt_time_;            // serialization time of a full packet
    sim_time port_limit_;          // per-port backlog (as send time) below which we pull
    sim_time ring_limit_;          // one port's backlog at which we stop pulling
    sim_time timer_at_ = k_never;  // earliest host_timer event pending
    sim_time wake_at_ = k_never;   // earliest tx_wake event pending
    sim_time tx_now_ = 0;          // the time of the pull in progress
    uint32_t tx_pkt_ = 0;          // the pool packet tx_buffer() handed out
    host_stats stats_;
    std::array<completion, 64> cq_buf_{};
    std::array<conn_event, 16> ev_buf_{};
};

} // namespace metaroce::sim
