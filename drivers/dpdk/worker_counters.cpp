// The worker's counter table: name, place and meaning of every counter.
#include "dpdk/worker_counters.hpp"

namespace metaroce::dpdk {

namespace {

// rx_drops[0] (rx_drop::none) is never counted: the array starts at too_short.
std::string_view drop_name(size_t i) noexcept
{
    return to_string(rx_drop(i + 1));
}

constexpr std::array k_fields = {
    METAROCE_COUNTER(worker_counters, loops, "poll iterations"),
    METAROCE_COUNTER(worker_counters, busy_loops, "poll iterations that moved a packet or ran a timer"),
    METAROCE_COUNTER(worker_counters, rx_frames, "frames received"),
    METAROCE_COUNTER(worker_counters, rx_bytes, "bytes received"),
    METAROCE_COUNTER(worker_counters, tx_frames, "frames sent"),
    METAROCE_COUNTER(worker_counters, tx_bytes, "bytes sent"),
    counter_field{"rx_drops", offsetof(worker_counters, rx_drops) + sizeof(uint64_t),
                  "frames dropped before the transport, by reason", size_t(rx_drop::count_) - 1,
                  &drop_name},
    METAROCE_COUNTER(worker_counters, rx_not_ours, "frames addressed to no worker of this process"),
    METAROCE_COUNTER(worker_counters, rx_plane_down, "frames dropped: plane administratively down"),
    METAROCE_COUNTER(worker_counters, rx_multi_seg, "dropped: frames in several mbufs (port buffers smaller than the frames)"),
    METAROCE_COUNTER(worker_counters, tx_plane_down, "frames dropped: plane down"),
    METAROCE_COUNTER(worker_counters, tx_no_mbuf, "frames not sent: no mbuf"),
    METAROCE_COUNTER(worker_counters, tx_bad_frame, "frames for a plane this node does not have"),
    METAROCE_COUNTER(worker_counters, tx_queue_full, "bursts the port did not take whole (kept, retried)"),
    METAROCE_COUNTER(worker_counters, tx_port_stalled, "frames dropped: their port took nothing for 1 ms"),
    METAROCE_COUNTER(worker_counters, tx_zero_copy, "data frames sent with their payload in place (no copy)"),
    METAROCE_COUNTER(worker_counters, tx_iova_lookups, "IOVA-as-PA: memory segments (hugepages) looked up for frames sent in place, once per segment entered"),
    METAROCE_COUNTER(worker_counters, tx_payload_copied, "data frames whose payload was copied (memory not registered for zero copy)"),
    METAROCE_COUNTER(worker_counters, tx_payload_inlined, "data frames whose short payload was copied behind the headers (shorter than tx_copy_below, 256 bytes)"),
    METAROCE_COUNTER(worker_counters, handoff_out, "frames handed to another worker"),
    METAROCE_COUNTER(worker_counters, handoff_in, "frames handed to us by another worker"),
    METAROCE_COUNTER(worker_counters, handoff_drops, "frames dropped: the other worker's inbox was full"),
    METAROCE_COUNTER(worker_counters, timer_calls, "transport timer runs"),
    METAROCE_COUNTER(worker_counters, max_poll_gap_ns, "longest time between two polls"),
    METAROCE_COUNTER(worker_counters, max_tx_burst_ns, "longest single tx burst call"),
    counter_field{"plane_rx_frames", offsetof(worker_counters, plane_rx_frames), "frames received per plane",
                  k_max_planes},
    counter_field{"plane_tx_frames", offsetof(worker_counters, plane_tx_frames), "frames sent per plane",
                  k_max_planes},
};

static_assert(covers(k_fields, sizeof(worker_counters),
                     std::array<size_t, 1>{offsetof(worker_counters, rx_drops)}),
              "every worker counter needs an entry in k_fields");

} // namespace

std::span<const counter_field> worker_counter_fields() noexcept
{
    return k_fields;
}

} // namespace metaroce::dpdk
