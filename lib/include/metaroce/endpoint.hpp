// The sans-I/O MetaRoCE engine of one node. Drivers hand it received packets, the
// time and timer expiries; it hands back packets to send, completions and events.
// It never reads a clock, does no I/O and allocates only on the control path
// (connect, accept, register) and at a stream's first post_recv (its receive ring).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "metaroce/config.hpp"
#include "metaroce/counters.hpp"
#include "metaroce/inspect.hpp"
#include "metaroce/io_types.hpp"
#include "metaroce/memory_region.hpp"
#include "metaroce/verbs_types.hpp"

namespace metaroce {

inline constexpr uint64_t k_no_deadline = UINT64_MAX;

class endpoint {
public:
    explicit endpoint(const endpoint_config& cfg);
    ~endpoint();
    endpoint(const endpoint&) = delete;
    endpoint& operator=(const endpoint&) = delete;

    const endpoint_config& config() const noexcept;
    mr_table& memory() noexcept;

    // Control path. connect() returns k_no_conn when the table is full.
    conn_id connect(uint32_t peer_addr, uint64_t now_ns);
    void close(conn_id c, uint64_t now_ns);

    // Verbs-shaped posting and polling.
    post_result post_send(conn_id c, const send_wr& wr, uint64_t now_ns);
    post_result post_recv(conn_id c, uint16_t stream, const recv_wr& wr);
    // Takes back a stream's posted receives that no arriving message has claimed yet, with
    // no completions (the caller owns their wr_ids): for a Verbs QP leaving its stream, so
    // a late SEND meets "receive not ready" (spec 8.2) instead of memory the QP gave up.
    // Returns how many were withdrawn.
    uint32_t withdraw_recvs(conn_id c, uint16_t stream) noexcept;
    // Makes a stream's unfinished requests independent of application memory: each one's
    // bytes are copied into memory the engine owns (a READ lands in a scratch buffer), so
    // it can still be resent after the caller deregisters its regions, and the connection
    // its other streams share does not fail on it. For a Verbs QP being destroyed (its
    // completions still come, for the caller to ignore). Control path: allocates.
    uint32_t orphan_sends(conn_id c, uint16_t stream);
    size_t poll_cq(std::span<completion> out);
    size_t poll_events(std::span<conn_event> out);
    // Streams that answered a SEND "receive not ready" since the last call (bounded: when
    // the queue is full a notice is dropped; the SEND's retry after the RNR delay repeats it).
    size_t poll_recv_wanted(std::span<recv_wanted> out);

    // Datapath.
    void on_packet(const rx_meta& meta, std::span<const uint8_t> bytes, uint64_t now_ns);
    // Builds the next packet to send into frame.buf; false when nothing may go now.
    bool poll_tx(uint64_t now_ns, tx_frame& frame);
    // ACKs or NAKs are waiting to be built (poll_tx sends them ahead of data, spec 5.4).
    bool acks_owed() const noexcept;
    // Earliest time on_timer() has work (k_no_deadline: none). May be early, never late.
    uint64_t next_timer() const noexcept;
    void on_timer(uint64_t now_ns);

    // Planes (spec 5.9). Drivers call this on link changes; operators through the app.
    // Taking a plane down moves every path on it to the other planes at once.
    void set_plane_admin(uint8_t plane, bool up, uint64_t now_ns);
    std::vector<plane_info> planes() const;

    const counters& stats() const noexcept;
    void clear_stats() noexcept;
    std::optional<conn_info> inspect(conn_id c) const;
    pool_usage pools() const noexcept;
    std::vector<conn_id> connections() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace metaroce
