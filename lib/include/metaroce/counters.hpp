// Endpoint counters: the datapath counts instead of logging.
#pragma once

#include <array>
#include <cstdint>

#include "metaroce/wire/codec.hpp"

namespace metaroce {

struct counters {
    uint64_t rx_packets = 0;
    uint64_t rx_bytes = 0;
    uint64_t tx_packets = 0;
    uint64_t tx_bytes = 0;
    uint64_t tx_data_packets = 0;
    uint64_t tx_payload_bytes = 0;
    uint64_t rx_payload_bytes = 0;     // placed into memory, duplicates excluded
    uint64_t tx_acks = 0;
    uint64_t rx_acks = 0;
    uint64_t tx_naks = 0;
    uint64_t rx_naks = 0;
    uint64_t retransmits = 0;
    uint64_t timeouts = 0;             // path RTO expiries
    uint64_t tail_probes = 0;          // newest packet resent after a quiet 2 RTTs
    uint64_t reroutes = 0;             // path took a new UDP source port or plane
    uint64_t probes_sent = 0;
    uint64_t probe_acks = 0;
    uint64_t plane_downs = 0;          // planes declared dead by detection
    uint64_t plane_ups = 0;            // planes re-admitted after a probe was answered
    uint64_t rx_ce = 0;                // data packets that arrived CE-marked
    uint64_t rx_duplicates = 0;
    uint64_t rx_beyond_window = 0;
    uint64_t rx_unknown_conn = 0;      // dst_conn names no live connection
    uint64_t rx_wrong_peer = 0;        // source address is not the connection's peer
    uint64_t rx_bad_path = 0;
    uint64_t rx_invalid = 0;           // well-formed but inconsistent with connection state
    uint64_t rx_stale_ack = 0;         // ACK outside the path's outstanding range
    uint64_t rx_rnr = 0;               // SEND arrived before its receive was posted
    uint64_t rx_access_errors = 0;     // rkey/access/bounds failures (nothing written)
    uint64_t completions = 0;
    uint64_t conn_errors = 0;
    uint64_t cookies_sent = 0;         // CONNECTs answered with a COOKIE, no state kept
    uint64_t rx_bad_cookie = 0;        // CONNECT with a wrong or expired cookie, stray COOKIE
    uint64_t rx_bad_token = 0;         // CLOSE, CLOSE_ACK or PROBE_ACK failing its checks
    uint64_t rx_bad_shape = 0;         // data packets off the mtu grid or with missing/repeated parts
    uint64_t rx_hint_floored = 0;      // rate hints raised to cc.min_rate_hint_mbps
    uint64_t keepalives = 0;           // probes of a quiet peer (spec 7.8)
    uint64_t conns_expired = 0;        // connections failed by silence while idle
    uint64_t conns_reaped = 0;         // failed connections freed after the linger time
    std::array<uint64_t, size_t(wire::parse_error::count_)> rx_malformed{};

    uint64_t rx_malformed_total() const noexcept
    {
        uint64_t n = 0;
        for (auto v : rx_malformed) {
            n += v;
        }
        return n;
    }
};

} // namespace metaroce
