// The lcore worker: one node's datapath step, run to completion in the style of
// l3fwd: one endpoint per worker (shared nothing), one RX and one TX queue per plane
// port. It owns no loop and no lcore: the program that runs the lcore calls poll()
// (the metaroce app's datapath, metaroce-perf's session, tests).
//
//   poll(now): RX burst per plane -> parse Eth/IPv4/UDP -> endpoint::on_packet
//              -> hand-off ring (frames for another worker's node) -> timers
//              -> pull packets from the core into mbufs -> TX burst per plane.
// The order and the pull are the shared loop's (common/endpoint_loop.hpp); the worker
// is its packet I/O.
//
// Steering, for a process that runs several workers (the apps run one): each worker
// is its own node with its own IPv4 address per plane, so a connection belongs to
// the worker whose address it was opened to, whatever UDP source port (path) its
// packets use. Frames arriving on a queue polled by another worker are passed to
// the owner through its single-consumer `inbox` ring (software hand-off); a port
// with rte_flow can instead steer on the destination address straight to the
// owner's queue, which makes the hand-off path idle.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "common/endpoint_loop.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/encap.hpp"
#include "dpdk/extbuf.hpp"
#include "dpdk/plane_log.hpp"
#include "dpdk/planes.hpp"
#include "dpdk/stage_timing.hpp"
#include "dpdk/worker_counters.hpp"
#include "metaroce/endpoint.hpp"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace metaroce::dpdk {

inline constexpr uint16_t k_burst = 32;
// A plane's TX queue holds up to 2 bursts; past this the worker stops pulling even
// while other planes have room (the core may still put a packet on a backed-up plane
// when no other path has window).
inline constexpr uint16_t k_queue_stop = k_burst + k_burst / 2;
// A port that took no frame for this long is stalled (its link is down).
inline constexpr uint64_t k_port_stall_ns = 1'000'000;

// A worker that owns another node's address: where its frames go.
struct steer_entry {
    uint32_t node = 0;
    rte_ring* inbox = nullptr;
};

struct worker_config {
    endpoint_config ep;             // ep.local_addr is this worker's node address
    uint16_t queue = 0;             // RX/TX queue index on every plane port
    bool poll_rx = true;            // false: the port has fewer queues; frames arrive by hand-off
    std::vector<plane_port> planes; // index = plane number
    std::vector<static_neighbor> neighbors;
    rte_mempool* pool = nullptr;
    const plane_admin* admin = nullptr; // may be null: all planes up
    rte_ring* inbox = nullptr;      // frames handed to us by other workers (may be null)
    std::vector<steer_entry> steering; // other workers of this process
    uint16_t tx_budget = 64;        // packets pulled from the core per poll
    bool tx_zero_copy = true;       // send payloads from registered memory where ports allow
    // Shorter payloads are copied behind the headers even when they could go in place:
    // a second mbuf (allocated, attached, freed through the region's count) costs more
    // than copying them, as an HCA inlines small sends into its descriptor.
    uint16_t tx_copy_below = 256;
};

class worker {
public:
    explicit worker(const worker_config& cfg);
    ~worker();
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    endpoint& ep() noexcept { return ep_; }
    const endpoint& ep() const noexcept { return ep_; }
    uint32_t node() const noexcept { return cfg_.ep.local_addr; }
    size_t planes() const noexcept { return cfg_.planes.size(); }

    // One run-to-completion iteration; true when it moved any packet or ran a timer.
    // flush = false holds the pass open until send_held(): it only receives (ACKs set
    // aside), the program takes its completions and posts in between, and its reply is
    // built and leaves first (see send_held).
    bool poll(uint64_t now_ns, bool flush = true);
    // Builds the program's reply (the first data packet) ahead of the ACKs the held pass
    // owes and sends it in its own burst; then takes in the ACKs that arrived in that
    // pass (they waited, so the reply was not built behind them), runs the timers (after
    // those ACKs, so none fires for what they settle) and sends the rest. True when the
    // whole held pass (poll and send_held) moved anything.
    bool send_held(uint64_t now_ns);
    // Sends whatever is still queued for the ports (at stop).
    void flush() noexcept;

    const worker_counters& counters() const noexcept { return ctr_; }
    void clear_counters() noexcept { ctr_ = {}; stages_ = {}; }
    // Cycles per loop stage (stage_timing.hpp); all zero unless built with stage_timing.
    const stage_times& stages() const noexcept { return stages_; }
    stage_times& stages() noexcept { return stages_; } // the program adds `completion`
    // Plane state changes with their times (tsc_clock ns) and the first sends after.
    const plane_log& plane_events() const noexcept { return log_; }
    void clear_plane_events() noexcept { log_.clear(); }

    // Zero copy (extbuf.hpp). Memory registered here (besides with the endpoint) is sent
    // from in place: data frames chain their payload straight from it. Unregistered
    // memory is copied into the frame. Both on the worker's lcore.
    bool zero_copy() const noexcept { return zero_copy_; }
    const extbuf_regions::region& tx_register(const void* base, size_t len);
    // Sends what is queued and waits, up to timeout_ns, until no mbuf refers to the
    // region any more; throws dpdk_error naming how many are still in flight.
    void tx_deregister(const void* base, uint64_t timeout_ns = 1'000'000'000);
    uint32_t tx_in_flight(const void* base) const noexcept;

    // The packet I/O of the shared endpoint loop (common/endpoint_loop.hpp).
    bool rx_burst(const io::deliver_to<endpoint>& deliver, uint64_t now_ns);
    void before_tx(uint64_t) { watch_planes(); } // the first frames after a change count
    bool tx_backlog(uint64_t now_ns);
    std::span<uint8_t> tx_buffer(uint64_t now_ns) noexcept;
    void tx_unused() noexcept;
    io::tx_next tx_send(const tx_frame& f, uint64_t now_ns) noexcept;
    void tx_flush(uint64_t now_ns) noexcept;
    bool tx_zero_copy() const noexcept { return zero_copy_; }
    uint32_t tx_busy_planes(uint64_t now_ns) const noexcept;
    uint64_t time_begin() const noexcept { return stage_times::begin(); }
    void time_built(const tx_frame& f, uint64_t t0) noexcept
    {
        if constexpr (k_stage_timing) {
            stages_.end(f.is_data() ? stage::data_build : stage::ack_build, t0);
        } else {
            (void)f, (void)t0;
        }
    }
    void time_timers(uint64_t t0) noexcept { stages_.end(stage::timers, t0); }
    bool after_reply(uint64_t now_ns) { return take_later_acks(now_ns); } // io::send_held

private:
    void watch_planes();
    void plane_changed(uint8_t plane, bool up, plane_cause why) noexcept;
    bool plane_up(uint8_t plane) const noexcept;
    void rx_frame(rte_mbuf* m, uint8_t plane, const io::deliver_to<endpoint>& deliver);
    bool rx_plane(uint8_t plane, const io::deliver_to<endpoint>& deliver);
    bool rx_inbox(const io::deliver_to<endpoint>& deliver);
    void flush_plane(uint8_t plane) noexcept;
    bool take_later_acks(uint64_t now_ns);
    void count_pass(const io::poll_result& r) noexcept;
    bool port_stalled(uint8_t plane, uint64_t now_ns) const noexcept;
    bool plane_backed_up(uint8_t plane, uint64_t now_ns) const noexcept;
    bool tx_must_stop(uint64_t now_ns) const noexcept;
    rte_mbuf* tx_alloc() noexcept;
    bool chain_payload(rte_mbuf* m, const tx_frame& f) noexcept;

    worker_config cfg_;
    endpoint ep_;
    worker_counters ctr_;
    stage_times stages_;
    std::array<neighbor_table, k_max_planes> neigh_;
    std::array<int16_t, 1024> plane_of_port_{}; // port id -> plane, -1: not ours

    struct tx_queue {
        std::array<rte_mbuf*, 2 * k_burst> pkts{};
        uint16_t n = 0;
    };
    std::array<tx_queue, k_max_planes> txq_;

    // A held pass (poll(now, false) .. send_held): the ACKs it received wait in later_
    // (taken in by send_held, or at once when later_ is full).
    struct later_ack {
        rte_mbuf* m;
        rx_meta meta;
        std::span<const uint8_t> bytes;
    };
    bool holding_ = false;
    bool held_busy_ = false;                        // the held pass's poll() moved something
    std::array<later_ack, k_burst> later_{};
    uint16_t later_n_ = 0;
    std::array<rte_mbuf*, k_burst> spare_{}; // allocated in bulk, not yet used
    uint16_t spare_n_ = 0;
    rte_mbuf* tx_cur_ = nullptr;             // the mbuf tx_buffer() handed out
    bool zero_copy_ = false;                 // every plane takes chains, and it is wanted
    extbuf_regions ext_;

    // Plane watch: compared once per poll, the endpoint's list read only on a change.
    tsc_clock clk_;
    plane_log log_;
    uint64_t plane_changes_seen_ = 0;          // endpoint plane_downs + plane_ups
    std::array<bool, k_max_planes> detected_up_{};
    std::array<bool, k_max_planes> admin_up_{};
    std::array<uint64_t, k_max_planes> last_tx_ns_{};
    uint64_t last_poll_ns_ = 0;
    std::array<uint64_t, k_max_planes> stalled_since_{}; // 0: the port takes frames
};

} // namespace metaroce::dpdk
