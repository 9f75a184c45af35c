// Endpoint counters: the datapath counts instead of logging. counter_fields() names
// every one of them; whatever prints counters (prompt, telemetry, JSON, the model's
// result) walks that table, so a counter added here shows up everywhere at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

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
    uint64_t rx_also_acked = 0;        // packets acknowledged by another path's ACK (a lost ACK repaired)
    uint64_t tx_naks = 0;
    uint64_t rx_naks = 0;
    uint64_t retransmits = 0;
    uint64_t timeouts = 0;             // path RTO expiries
    uint64_t tail_probes = 0;          // newest packet resent after a quiet 2 RTTs
    uint64_t tail_probes_new = 0;      // tail probes that sent new data on the quiet path instead
    uint64_t rack_losses = 0;          // packets judged lost by a later one delivered on any path
    uint64_t spurious_retx = 0;        // resends whose original was acknowledged first
    uint64_t proactive_copies = 0;     // unacknowledged packets copied into spare window under loss
    uint64_t tx_ack_copies = 0;        // ACKs sent a second time, on another route, under loss
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
    uint64_t tx_hello_copies = 0;      // CONNECTs and ACCEPTs sent again at once, on another route
    uint64_t cookies_sent = 0;         // CONNECTs answered with a COOKIE, no state kept
    uint64_t rx_bad_cookie = 0;        // CONNECT with a wrong or expired cookie, stray COOKIE
    uint64_t rx_bad_token = 0;         // CLOSE, CLOSE_ACK or PROBE_ACK failing its checks
    uint64_t rx_bad_shape = 0;         // data packets off the mtu grid or with missing/repeated parts
    uint64_t rx_hint_floored = 0;      // rate hints raised to cc.min_rate_hint_mbps
    uint64_t keepalives = 0;           // probes of a quiet peer (spec 7.8)
    uint64_t conns_expired = 0;        // connections failed by silence while idle
    uint64_t conns_reaped = 0;         // failed connections freed after the linger time
    uint64_t record_pool_waits = 0;    // a connection found no free record chunk (record_chunks)
    uint64_t slot_pool_waits = 0;      // a message found no free slot chunk (send/recv_slot_chunks)
    uint64_t send_log_misses = 0;      // transmissions RACK could not log (send_log_chunks spent)
    uint64_t sack_pool_waits = 0;      // out-of-order packets refused: no free SACK bitmap (sack_blocks)
    uint64_t ack_pool_waits = 0;       // packets refused or ACKs not queued: no free ACK block (ack_blocks)
    uint64_t nak_drops = 0;            // NAKs not queued: the connection's NAK ring was full
    // Indexed by parse_error; [none] stays 0.
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

// One entry of a counter table (in the spirit of DPDK's xstats name/offset lists): a
// uint64_t at `offset` of the counted struct, or `count` of them in a row whose names
// are name.<index_name(i)>.
struct counter_field {
    std::string_view name;
    size_t offset = 0;
    std::string_view help;
    size_t count = 1;
    std::string_view (*index_name)(size_t) = nullptr;
};

// The entry of a plain uint64_t member: its name is the member's.
#define METAROCE_COUNTER(type, field, help) ::metaroce::counter_field{#field, offsetof(type, field), help}

// True when the table names every uint64_t of a struct of `size` bytes exactly once,
// apart from the `unused` offsets: a field added without a table entry fails the build.
template <size_t N, size_t U = 0>
constexpr bool covers(const std::array<counter_field, N>& table, size_t size,
                      const std::array<size_t, U>& unused = {})
{
    size_t slots = U;
    for (size_t i = 0; i < N; ++i) {
        const counter_field& f = table[i];
        if (f.offset % sizeof(uint64_t) != 0 || f.offset + f.count * sizeof(uint64_t) > size) {
            return false;
        }
        for (size_t j = 0; j < N; ++j) {
            const counter_field& g = table[j];
            if (i != j && f.offset < g.offset + g.count * sizeof(uint64_t) &&
                g.offset < f.offset + f.count * sizeof(uint64_t)) {
                return false; // two entries share a counter
            }
        }
        for (size_t u : unused) {
            if (u >= f.offset && u < f.offset + f.count * sizeof(uint64_t)) {
                return false;
            }
        }
        slots += f.count;
    }
    return slots * sizeof(uint64_t) == size;
}

// Calls fn(name, value, help) for every counter of the table, in table order.
template <typename Counted, typename Fn>
void for_each_counter(const Counted& s, std::span<const counter_field> table, Fn&& fn)
{
    const auto* base = reinterpret_cast<const unsigned char*>(&s);
    for (const counter_field& f : table) {
        for (size_t i = 0; i < f.count; ++i) {
            uint64_t v = 0;
            std::memcpy(&v, base + f.offset + i * sizeof(uint64_t), sizeof v);
            if (f.count == 1) {
                fn(std::string(f.name), v, f.help);
            } else {
                const std::string index = f.index_name != nullptr ? std::string(f.index_name(i))
                                                                  : std::to_string(i);
                fn(std::string(f.name) + "." + index, v, f.help);
            }
        }
    }
}

// Adds every counter of `from` to `into` (the same table walked as values).
template <typename Counted>
void add_counters(Counted& into, const Counted& from, std::span<const counter_field> table) noexcept
{
    auto* dst = reinterpret_cast<unsigned char*>(&into);
    const auto* src = reinterpret_cast<const unsigned char*>(&from);
    for (const counter_field& f : table) {
        for (size_t i = 0; i < f.count; ++i) {
            uint64_t a = 0;
            uint64_t b = 0;
            std::memcpy(&a, dst + f.offset + i * sizeof(uint64_t), sizeof a);
            std::memcpy(&b, src + f.offset + i * sizeof(uint64_t), sizeof b);
            a += b;
            std::memcpy(dst + f.offset + i * sizeof(uint64_t), &a, sizeof a);
        }
    }
}

// The endpoint's counters, in the order they are shown.
std::span<const counter_field> counter_fields() noexcept;

} // namespace metaroce
