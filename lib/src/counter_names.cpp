// The endpoint's counter table: name, place and meaning of every counter.
#include "metaroce/counters.hpp"

namespace metaroce {

namespace {

// rx_malformed[0] (parse_error::none) is never counted: the array starts at too_short.
std::string_view malformed_name(size_t i) noexcept
{
    return wire::to_string(wire::parse_error(i + 1));
}

constexpr size_t k_malformed_first = offsetof(counters, rx_malformed) + sizeof(uint64_t);

constexpr std::array k_fields = {
    METAROCE_COUNTER(counters, rx_packets, "packets received"),
    METAROCE_COUNTER(counters, rx_bytes, "bytes received (transport headers and payload)"),
    METAROCE_COUNTER(counters, tx_packets, "packets sent"),
    METAROCE_COUNTER(counters, tx_bytes, "bytes sent (transport headers and payload)"),
    METAROCE_COUNTER(counters, tx_data_packets, "data packets sent, resends included"),
    METAROCE_COUNTER(counters, tx_payload_bytes, "payload bytes sent"),
    METAROCE_COUNTER(counters, rx_payload_bytes, "payload bytes placed into memory, duplicates excluded"),
    METAROCE_COUNTER(counters, tx_acks, "ACKs sent"),
    METAROCE_COUNTER(counters, rx_acks, "ACKs received"),
    METAROCE_COUNTER(counters, rx_also_acked, "packets acknowledged by another path's ACK (a lost ACK repaired)"),
    METAROCE_COUNTER(counters, tx_naks, "NAKs sent"),
    METAROCE_COUNTER(counters, rx_naks, "NAKs received"),
    METAROCE_COUNTER(counters, retransmits, "data packets resent"),
    METAROCE_COUNTER(counters, timeouts, "path RTO expiries"),
    METAROCE_COUNTER(counters, tail_probes, "newest packet resent after a quiet 2 RTTs"),
    METAROCE_COUNTER(counters, tail_probes_new, "tail probes that sent new data on the quiet path instead"),
    METAROCE_COUNTER(counters, rack_losses, "packets judged lost by a later one delivered on any path"),
    METAROCE_COUNTER(counters, spurious_retx, "resends whose original was acknowledged first"),
    METAROCE_COUNTER(counters, proactive_copies, "unacknowledged packets copied into spare window under loss"),
    METAROCE_COUNTER(counters, tx_ack_copies, "ACKs sent a second time, on another route, under loss"),
    METAROCE_COUNTER(counters, reroutes, "paths moved to a new UDP source port or plane"),
    METAROCE_COUNTER(counters, probes_sent, "PROBEs sent"),
    METAROCE_COUNTER(counters, probe_acks, "PROBE_ACKs received"),
    METAROCE_COUNTER(counters, plane_downs, "planes declared dead by detection"),
    METAROCE_COUNTER(counters, plane_ups, "planes re-admitted after a probe was answered"),
    METAROCE_COUNTER(counters, rx_ce, "data packets that arrived CE-marked"),
    METAROCE_COUNTER(counters, rx_duplicates, "data packets received again"),
    METAROCE_COUNTER(counters, rx_beyond_window, "data packets beyond the SACK window"),
    METAROCE_COUNTER(counters, rx_unknown_conn, "packets naming no live connection"),
    METAROCE_COUNTER(counters, rx_wrong_peer, "packets from an address that is not the connection's peer"),
    METAROCE_COUNTER(counters, rx_bad_path, "packets naming a path the connection does not have"),
    METAROCE_COUNTER(counters, rx_invalid, "packets inconsistent with the connection's state"),
    METAROCE_COUNTER(counters, rx_stale_ack, "ACKs outside the path's outstanding range"),
    METAROCE_COUNTER(counters, rx_rnr, "SENDs that arrived before their receive was posted"),
    METAROCE_COUNTER(counters, rx_access_errors, "rkey, access or bounds failures (nothing written)"),
    METAROCE_COUNTER(counters, completions, "completions delivered"),
    METAROCE_COUNTER(counters, conn_errors, "connections that failed"),
    METAROCE_COUNTER(counters, tx_hello_copies, "CONNECTs and ACCEPTs sent again at once, on another route"),
    METAROCE_COUNTER(counters, cookies_sent, "CONNECTs answered with a COOKIE, no state kept"),
    METAROCE_COUNTER(counters, rx_bad_cookie, "CONNECTs with a wrong or expired cookie, stray COOKIEs"),
    METAROCE_COUNTER(counters, rx_bad_token, "CLOSE, CLOSE_ACK or PROBE_ACK failing their checks"),
    METAROCE_COUNTER(counters, rx_bad_shape, "data packets off the mtu grid or with missing or repeated parts"),
    METAROCE_COUNTER(counters, rx_hint_floored, "rate hints raised to the configured floor"),
    METAROCE_COUNTER(counters, keepalives, "probes of a quiet peer"),
    METAROCE_COUNTER(counters, conns_expired, "connections failed by silence while idle"),
    METAROCE_COUNTER(counters, conns_reaped, "failed connections freed after the linger time"),
    METAROCE_COUNTER(counters, record_pool_waits, "times a connection waited for a free in-flight record chunk"),
    METAROCE_COUNTER(counters, slot_pool_waits, "messages refused or deferred for want of a free message slot chunk"),
    METAROCE_COUNTER(counters, send_log_misses, "transmissions not logged for RACK for want of a free send log chunk"),
    METAROCE_COUNTER(counters, sack_pool_waits, "out-of-order packets refused for want of a free SACK bitmap"),
    METAROCE_COUNTER(counters, ack_pool_waits, "packets refused (or ACKs not queued) for want of a free ACK block"),
    METAROCE_COUNTER(counters, nak_drops, "NAKs not queued because the connection's NAK ring was full"),
    counter_field{"rx_malformed", k_malformed_first, "packets that failed to parse, by reason",
                  size_t(wire::parse_error::count_) - 1, &malformed_name},
};

static_assert(covers(k_fields, sizeof(counters),
                     std::array<size_t, 1>{offsetof(counters, rx_malformed)}),
              "every counter needs an entry in k_fields");

} // namespace

std::span<const counter_field> counter_fields() noexcept
{
    return k_fields;
}

} // namespace metaroce
