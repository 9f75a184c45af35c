// What a worker counts, and the table that names it (like the core's counter_fields):
// the prompt, telemetry and --counters all print from the table.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "dpdk/encap.hpp"
#include "dpdk/planes.hpp"
#include "metaroce/counters.hpp"

namespace metaroce::dpdk {

struct worker_counters {
    uint64_t loops = 0;
    uint64_t busy_loops = 0;
    uint64_t rx_frames = 0;
    uint64_t rx_bytes = 0;
    uint64_t tx_frames = 0;
    uint64_t tx_bytes = 0;
    std::array<uint64_t, size_t(rx_drop::count_)> rx_drops{}; // [none] stays 0
    uint64_t rx_not_ours = 0;      // addressed to no worker of this process
    uint64_t rx_plane_down = 0;    // dropped: plane administratively down
    uint64_t rx_multi_seg = 0;     // dropped: a frame in several mbufs (buffers < the MTU's frames)
    uint64_t tx_plane_down = 0;
    uint64_t tx_no_mbuf = 0;
    uint64_t tx_bad_frame = 0;     // the core named a plane we do not have
    uint64_t tx_queue_full = 0;    // bursts the port did not take whole (kept, retried)
    uint64_t tx_port_stalled = 0;  // dropped: their port took nothing for k_port_stall_ns
    uint64_t tx_zero_copy = 0;     // data frames sent with their payload in place (extbuf.hpp)
    uint64_t tx_payload_copied = 0; // data frames whose payload was copied (memory not registered here)
    uint64_t tx_payload_inlined = 0; // data frames whose payload was copied for being short (tx_copy_below)
    uint64_t tx_iova_lookups = 0;  // IOVA-as-PA: memory segments looked up for frames sent in place
    uint64_t handoff_out = 0;
    uint64_t handoff_in = 0;
    uint64_t handoff_drops = 0;
    uint64_t timer_calls = 0;
    uint64_t max_poll_gap_ns = 0;  // longest time between two polls (descheduled, stalled)
    uint64_t max_tx_burst_ns = 0;  // longest single rte_eth_tx_burst call
    std::array<uint64_t, k_max_planes> plane_rx_frames{};
    std::array<uint64_t, k_max_planes> plane_tx_frames{};

    uint64_t rx_drops_total() const noexcept
    {
        uint64_t n = 0;
        for (auto v : rx_drops) {
            n += v;
        }
        return n;
    }
};

std::span<const counter_field> worker_counter_fields() noexcept;

} // namespace metaroce::dpdk
