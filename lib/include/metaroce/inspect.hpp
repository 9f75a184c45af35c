// Read-only snapshots of connection and path state for prompts, telemetry and tests.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "metaroce/verbs_types.hpp"

namespace metaroce {

// spec 5.8: good carries data; congested (most of its last ACK's packets were CE-marked,
// shown for one RTT) carries data within its trimmed window; suspect (a timeout) is used only when no good path
// has room; failed (repeated timeouts) carries nothing but probes until one is answered.
enum class path_state : uint8_t { good, congested, suspect, failed };
std::string_view to_string(path_state s) noexcept;

// spec 5.9: a plane is usable when the operator/driver has it up and the endpoint has not
// detected it dead.
struct plane_info {
    uint8_t plane = 0;
    bool admin_up = true;      // set by set_plane_admin (link state, `set plane N down`)
    bool detected_up = true;   // false after repeated timeouts with no progress on it
    uint32_t paths = 0;        // paths currently on it, all connections
    uint64_t timeouts = 0;     // path timeouts seen on it
    uint64_t downs = 0;        // times it was declared down (either way)
    uint64_t probes_sent = 0;
};

struct path_info {
    uint8_t index = 0;
    uint8_t plane = 0;
    uint16_t udp_sport = 0;
    path_state state = path_state::good;
    uint8_t home_plane = 0;
    double cwnd = 0;
    uint32_t inflight = 0;
    uint32_t next_psn = 0;
    uint32_t una = 0;             // oldest unacknowledged PSN
    uint32_t rx_expected = 0;     // receive side: cumulative point
    // A settled path (nothing out, no timer: its busy state went back to the endpoint's
    // pool) shows its kept summary: cwnd in 1/128 packet, srtt to 11 significant bits,
    // rto_ns 0, and no counts. The counts below cover the path's current busy spell.
    uint64_t srtt_ns = 0;
    uint64_t rto_ns = 0;
    uint32_t timeouts = 0;        // consecutive, resets on progress
    uint64_t tx_packets = 0;
    uint64_t retransmits = 0;
    uint64_t acked_ce = 0;        // packets the receiver reported CE-marked
    uint64_t acked_rx = 0;        // packets the receiver reported
};

struct conn_info {
    conn_id id = k_no_conn;
    conn_id peer_conn = k_no_conn;
    uint32_t peer_addr = 0;
    conn_state state = conn_state::connecting;
    bool incoming = false;
    uint16_t paths = 0;
    uint16_t mtu = 0;
    uint16_t streams = 0;
    double conn_cwnd = 0;         // effective: AIMD window capped by the rate hint
    uint32_t rate_hint_mbps = 0;  // last hint the peer sent us
    uint32_t rate_hint_sent_mbps = 0; // the share we tell the peer now (as receiver)
    uint32_t inflight = 0;
    uint32_t outstanding_msgs = 0;
    uint64_t tx_msgs_completed = 0;
    uint64_t rx_msgs_committed = 0;
    size_t state_bytes = 0;       // memory this connection holds
    std::vector<path_info> path;
};

// The endpoint's shared pools (in-flight records and path blocks, message slots, RACK send
// logs, READ jobs): a connection's state_bytes counts the chunks it holds; these say what
// the pools reserve (address space, touched only as used), hold now, and held at most
// (the sum of each pool's high-water mark).
struct pool_usage {
    size_t reserved_bytes = 0;
    size_t held_bytes = 0;
    size_t peak_bytes = 0;
};

} // namespace metaroce
