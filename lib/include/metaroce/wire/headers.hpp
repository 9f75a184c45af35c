// MetaRoCE transport headers, byte-exact as doc/spec.md section 3 describes them.
// All multi-byte fields are big-endian; every header is packed and size-checked.
#pragma once

#include <cstddef>
#include <cstdint>

#include "metaroce/wire/be.hpp"

namespace metaroce::wire {

// spec 2.2: IANA-unassigned port next to RoCEv2's 4791 and UET's 4793.
inline constexpr uint16_t k_udp_dst_port = 4796;
// spec 2.3: path entropy lives in the UDP source port, drawn from this range.
inline constexpr uint16_t k_udp_sport_min = 49152;
inline constexpr uint16_t k_udp_sport_span = 16384;

inline constexpr uint8_t k_version = 1;
// spec 3.6: a SACK bitmap covers this many PSNs starting at the cumulative ack.
inline constexpr uint32_t k_sack_bits = 256;

enum class opcode : uint8_t {
    write = 0x01,
    write_imm = 0x02,
    send = 0x03,
    send_imm = 0x04,
    read_req = 0x05,
    read_resp = 0x06,
    ack = 0x10,
    nak = 0x11,
    connect = 0x20,
    accept = 0x21,
    close = 0x22,
    close_ack = 0x23,
    probe = 0x24,
    probe_ack = 0x25,
    cookie = 0x26,
};

// spec 3.1: BTH flags.
namespace bth_flag {
inline constexpr uint16_t last = 1u << 0;     // last packet of its message
inline constexpr uint16_t ack_req = 1u << 1;  // receiver should acknowledge now
inline constexpr uint16_t retx = 1u << 2;     // this is a retransmission
inline constexpr uint16_t solicited = 1u << 3; // wake the receiver's application (Verbs solicited event)
inline constexpr uint16_t also_acks = 1u << 4; // ACK: also_cum is set (spec 3.6)
inline constexpr uint16_t drained = 1u << 5;   // data: the sender has nothing more queued (spec 6.4)
inline constexpr uint16_t known = last | ack_req | retx | solicited | also_acks | drained;
} // namespace bth_flag

// spec 3.1: base transport header, first in every packet.
struct bth {
    uint8_t version;
    opcode op;
    be16_t flags;
    be32_t dst_conn;  // receiver's connection id (0 in CONNECT)
    be32_t psn;       // per-path sequence (data), cumulative ack (ACK), offending PSN (NAK)
    uint8_t path;     // path index within the connection
    uint8_t plane;    // plane the sender put the packet on (informational)
    be16_t reserved;  // zero on send, ignored on receive
    be32_t tx_ts;     // sender clock, low 32 bits of nanoseconds; echoed in ACKs for RTT
} __attribute__((packed));
static_assert(sizeof(bth) == 20);

// spec 3.2: message header on WRITE*, SEND*, READ_REQ, READ_RESP.
struct msg_header {
    be16_t stream;    // ordered stream within the connection
    be16_t reserved;
    be32_t msn;       // connection message number of the requester (slot key)
    be32_t ssn;       // stream sequence number: completion order within the stream
    be32_t recv_seq;  // SEND*/WRITE_IMM: index of the posted receive it consumes
    be32_t msg_len;   // total message length in bytes
    be32_t offset;    // byte offset of this packet's payload within the message
} __attribute__((packed));
static_assert(sizeof(msg_header) == 24);

// spec 3.3: remote address on WRITE* and READ_REQ (every packet carries it).
struct reth {
    be64_t va;
    be32_t rkey;
    be32_t rate_hint_mbps; // READ_REQ: the share set aside for the responses (spec 6.4); else 0
} __attribute__((packed));
static_assert(sizeof(reth) == 16);

// spec 3.4: immediate data on WRITE_IMM and SEND_IMM.
struct imm_header {
    be32_t imm;
} __attribute__((packed));
static_assert(sizeof(imm_header) == 4);

// spec 3.6: per-path acknowledgment. BTH.psn is the cumulative ack (next expected PSN);
// bit i of sack (LSB-first within each byte) says PSN cum+i has been received.
struct ack_header {
    be32_t ts_echo;         // tx_ts of the packet that triggered this ACK
    be32_t rate_hint_mbps;  // receiver's allocated share for this sender, 0 = no hint
    be16_t rx_pkts;         // data packets received on this path since the previous ACK
    be16_t ce_pkts;         // how many of them carried ECN CE
    be32_t also_cum;        // another path's cumulative ack: path << 24 | low 24 bits of its PSN
    uint8_t sack[k_sack_bits / 8];
} __attribute__((packed));
static_assert(sizeof(ack_header) == 48);

// ack_header.also_cum: a path's windows are far smaller than 2^23 packets, so its sender
// places the low 24 bits of a cumulative point within [una, next_psn] unambiguously.
inline constexpr uint32_t k_also_psn_mask = 0xffffffu;
inline constexpr uint32_t pack_also_cum(uint8_t path, uint32_t cum) noexcept
{
    return uint32_t(path) << 24 | (cum & k_also_psn_mask);
}

enum class nak_reason : uint8_t {
    rnr = 1,             // no receive posted yet: retry later
    rkey_invalid = 2,    // unknown or revoked rkey
    access_denied = 3,   // region lacks the needed remote access right
    out_of_bounds = 4,   // message range outside the region
    length_error = 5,    // message longer than the posted receive
    invalid_request = 6, // unsupported or inconsistent request
    remote_operation = 7, // the responder could not place it (its receive buffer went away)
};

// spec 3.7: negative acknowledgment for one message.
struct nak_header {
    nak_reason reason;
    uint8_t reserved;
    be16_t stream;
    be32_t msn;
} __attribute__((packed));
static_assert(sizeof(nak_header) == 8);

// spec 3.8: CONNECT and ACCEPT carry the sender's connection parameters.
// CONNECT echoes the acceptor's cookie (spec 7.7); 0 when it has none yet.
struct hello_header {
    be64_t nonce;        // identifies one connection attempt of the initiator
    be32_t src_conn;     // sender's own connection id
    be32_t isn;          // first PSN of every path in the sender's direction
    be16_t paths;        // paths the sender wants (ACCEPT: agreed)
    be16_t mtu;          // largest payload per packet
    be16_t max_streams;
    be16_t max_msgs;     // outstanding messages per direction
    uint8_t planes;
    uint8_t reserved0;
    be16_t rq_depth;     // posted receives per stream
    union {              // by direction (spec 3.8)
        be32_t rtt_us;         // CONNECT: the initiator's round trip to the acceptor, 0 unknown
        be32_t rate_hint_mbps; // ACCEPT: the acceptor's share for this sender (spec 6.4), 0 = none
    } __attribute__((packed));
    be64_t cookie;       // CONNECT: the acceptor's cookie echoed; ACCEPT: 0
} __attribute__((packed));
static_assert(sizeof(hello_header) == 40);

// spec 3.9: CLOSE and CLOSE_ACK. The token (low 32 bits of the connection's nonce)
// shows the sender took part in the handshake.
struct close_header {
    be32_t src_conn;
    be32_t token;
} __attribute__((packed));
static_assert(sizeof(close_header) == 8);

// spec 3.10: PROBE and PROBE_ACK test one path without carrying data. The token is the
// prober's secret; only an answer that echoes it counts.
struct probe_header {
    be32_t token;
    be32_t ts_echo;
} __attribute__((packed));
static_assert(sizeof(probe_header) == 8);

// spec 3.11: COOKIE answers a CONNECT without creating state (spec 7.7).
struct cookie_header {
    be64_t nonce;        // the CONNECT's nonce, echoed
    be64_t cookie;       // to be echoed in the next CONNECT
    be32_t ts_echo;      // the CONNECT's BTH tx_ts: the initiator's round trip, unambiguous
    be32_t reserved;
} __attribute__((packed));
static_assert(sizeof(cookie_header) == 24);

} // namespace metaroce::wire
