// Parsing and building of MetaRoCE transport packets (the UDP payload).
// parse() never trusts the input: every length is checked and anything malformed is
// rejected with a reason the caller counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "metaroce/wire/headers.hpp"
#include "metaroce/wire/opcode_table.hpp"

namespace metaroce::wire {

enum class parse_error : uint8_t {
    none = 0,
    too_short,         // shorter than the BTH or than the opcode's fixed headers
    bad_version,
    unknown_opcode,
    unknown_flags,
    trailing_bytes,    // bytes after a packet type that carries no payload
    payload_overrun,   // offset + payload beyond the message length
    empty_payload,     // a data packet with no bytes that is not a whole empty message
    count_,
};
std::string_view to_string(parse_error e) noexcept;

// Host-order view of one packet; payload and sack point into the parsed buffer.
// No member initializers: parse_view() fills every field of a packet it accepts, so
// the per-packet path does not clear it first; `packet_view{}` and parse() give zeros.
struct packet_view {
    opcode op;
    uint16_t flags;
    uint32_t dst_conn;
    uint32_t psn;
    uint8_t path;
    uint8_t plane;
    uint32_t tx_ts;
    // message header (data opcodes)
    uint16_t stream;
    uint32_t msn;
    uint32_t ssn;
    uint32_t recv_seq;
    uint32_t msg_len;
    uint32_t offset;
    // reth / imm
    uint64_t va;
    uint32_t rkey;
    uint32_t read_hint_mbps; // READ_REQ's reth.rate_hint_mbps; 0 on other opcodes
    uint32_t imm;
    std::span<const uint8_t> payload;
    // fixed control headers, valid for their opcode only
    const ack_header* ack;
    const nak_header* nak;
    const hello_header* hello;
    const close_header* close;
    const probe_header* probe;
    const cookie_header* cookie;

    bool is_last() const noexcept { return (flags & bth_flag::last) != 0; }
};

struct parse_result {
    parse_error error = parse_error::none;
    packet_view pkt{};
    bool ok() const noexcept { return error == parse_error::none; }
};

// Fills v from bytes; v is complete only when this returns parse_error::none.
parse_error parse_view(std::span<const uint8_t> bytes, packet_view& v) noexcept;
parse_result parse(std::span<const uint8_t> bytes) noexcept;

// Fields to build a packet from; the builders write exactly the opcode's headers.
struct bth_fields {
    opcode op{};
    uint16_t flags = 0;
    uint32_t dst_conn = 0;
    uint32_t psn = 0;
    uint8_t path = 0;
    uint8_t plane = 0;
    uint32_t tx_ts = 0;
};
struct msg_fields {
    uint16_t stream = 0;
    uint32_t msn = 0;
    uint32_t ssn = 0;
    uint32_t recv_seq = 0;
    uint32_t msg_len = 0;
    uint32_t offset = 0;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;
    uint32_t read_hint_mbps = 0; // READ_REQ only
};

// Bytes of headers a data packet of this opcode carries before its payload.
constexpr size_t data_header_len(opcode op) noexcept { return sizeof(bth) + info(op).ext_len; }

// Each returns the bytes written, or 0 if `out` is too small.
size_t build_data(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                  std::span<const uint8_t> payload) noexcept;
// Writes the headers only; the caller places payload_len bytes right after them.
size_t build_data_headers(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                          size_t payload_len) noexcept;
inline size_t build_ack(std::span<uint8_t> out, const bth_fields& b, const ack_header& a) noexcept;
size_t build_nak(std::span<uint8_t> out, const bth_fields& b, const nak_header& n) noexcept;
size_t build_hello(std::span<uint8_t> out, const bth_fields& b, const hello_header& h) noexcept;
size_t build_close(std::span<uint8_t> out, const bth_fields& b, const close_header& c) noexcept;
size_t build_probe(std::span<uint8_t> out, const bth_fields& b, const probe_header& p) noexcept;
size_t build_cookie(std::span<uint8_t> out, const bth_fields& b, const cookie_header& c) noexcept;

// Largest packet the engine builds for a given payload MTU.
constexpr size_t max_packet_len(size_t mtu) noexcept
{
    return sizeof(bth) + sizeof(msg_header) + sizeof(reth) + sizeof(imm_header) + mtu;
}

// The per-packet parse and header build, inline so their fields go straight into
// the caller (no full by-value copy of the view through memory).
namespace detail {

template <typename H>
inline H load(const uint8_t* p) noexcept
{
    H h;
    std::memcpy(&h, p, sizeof(H));
    return h;
}

template <typename H>
inline void store(uint8_t* p, const H& h) noexcept
{
    std::memcpy(p, &h, sizeof(H));
}

// One field of a packed header, at its offset.
template <typename T>
inline void put(uint8_t* p, size_t off, T v) noexcept
{
    std::memcpy(p + off, &v, sizeof(T));
}

inline bth make_bth(const bth_fields& f) noexcept
{
    bth h{};
    h.version = k_version;
    h.op = f.op;
    h.flags = be16_t::from_host(f.flags);
    h.dst_conn = be32_t::from_host(f.dst_conn);
    h.psn = be32_t::from_host(f.psn);
    h.path = f.path;
    h.plane = f.plane;
    h.tx_ts = be32_t::from_host(f.tx_ts);
    return h;
}

} // namespace detail

inline parse_error parse_view(std::span<const uint8_t> bytes, packet_view& v) noexcept
{
    using detail::load;
    if (bytes.size() < sizeof(bth)) {
        return parse_error::too_short;
    }
    // Field by field from the buffer (no copy of a whole header first).
    const uint8_t* b = bytes.data();
    if (b[offsetof(bth, version)] != k_version) {
        return parse_error::bad_version;
    }
    const auto op = opcode(b[offsetof(bth, op)]);
    const opcode_info& oi = info(op);
    if (!oi.valid) {
        return parse_error::unknown_opcode;
    }
    v.op = op;
    v.flags = load<be16_t>(b + offsetof(bth, flags)).host();
    if ((v.flags & ~bth_flag::known) != 0) {
        return parse_error::unknown_flags;
    }
    v.dst_conn = load<be32_t>(b + offsetof(bth, dst_conn)).host();
    v.psn = load<be32_t>(b + offsetof(bth, psn)).host();
    v.path = b[offsetof(bth, path)];
    v.plane = b[offsetof(bth, plane)];
    v.tx_ts = load<be32_t>(b + offsetof(bth, tx_ts)).host();

    if (bytes.size() < sizeof(bth) + oi.ext_len) {
        return parse_error::too_short;
    }
    const uint8_t* p = b + sizeof(bth);
    const size_t rest = bytes.size() - sizeof(bth) - oi.ext_len;
    if (!oi.has_payload && rest != 0) {
        return parse_error::trailing_bytes;
    }
    v.ack = nullptr;
    v.nak = nullptr;
    v.hello = nullptr;
    v.close = nullptr;
    v.probe = nullptr;
    v.cookie = nullptr;
    if (!oi.has_msg) {
        v.stream = 0;
        v.msn = v.ssn = v.recv_seq = v.msg_len = v.offset = 0;
        v.va = 0;
        v.rkey = v.imm = 0;
        v.payload = {};
        // Fixed headers are read in place (packed, byte-aligned) by their users.
        switch (op) {
        case opcode::ack: v.ack = reinterpret_cast<const ack_header*>(p); break;
        case opcode::nak: v.nak = reinterpret_cast<const nak_header*>(p); break;
        case opcode::connect:
        case opcode::accept: v.hello = reinterpret_cast<const hello_header*>(p); break;
        case opcode::close:
        case opcode::close_ack: v.close = reinterpret_cast<const close_header*>(p); break;
        case opcode::probe:
        case opcode::probe_ack: v.probe = reinterpret_cast<const probe_header*>(p); break;
        case opcode::cookie: v.cookie = reinterpret_cast<const cookie_header*>(p); break;
        default: break;
        }
        return parse_error::none;
    }

    v.stream = load<be16_t>(p + offsetof(msg_header, stream)).host();
    v.msn = load<be32_t>(p + offsetof(msg_header, msn)).host();
    v.ssn = load<be32_t>(p + offsetof(msg_header, ssn)).host();
    v.recv_seq = load<be32_t>(p + offsetof(msg_header, recv_seq)).host();
    v.msg_len = load<be32_t>(p + offsetof(msg_header, msg_len)).host();
    v.offset = load<be32_t>(p + offsetof(msg_header, offset)).host();
    p += sizeof(msg_header);
    v.va = 0;
    v.rkey = 0;
    v.read_hint_mbps = 0;
    v.imm = 0;
    if (oi.has_reth) {
        v.va = load<be64_t>(p + offsetof(reth, va)).host();
        v.rkey = load<be32_t>(p + offsetof(reth, rkey)).host();
        if (v.op == opcode::read_req) {
            v.read_hint_mbps = load<be32_t>(p + offsetof(reth, rate_hint_mbps)).host();
        }
        p += sizeof(reth);
    }
    if (oi.has_imm) {
        v.imm = load<be32_t>(p + offsetof(imm_header, imm)).host();
        p += sizeof(imm_header);
    }
    v.payload = std::span<const uint8_t>(p, rest);
    if (oi.has_payload) {
        if (uint64_t(v.offset) + rest > v.msg_len) {
            return parse_error::payload_overrun;
        }
        // Only an empty message travels as an empty packet (spec 4.3).
        if (rest == 0 && (v.msg_len != 0 || v.offset != 0 || !v.is_last())) {
            return parse_error::empty_payload;
        }
    }
    return parse_error::none;
}

// The same, for callers that want a view even of a rejected packet: zeros where
// parse_view stopped.
inline parse_result parse(std::span<const uint8_t> bytes) noexcept
{
    parse_result r;
    packet_view v{};
    r.error = parse_view(bytes, v);
    r.pkt = v;
    return r;
}

inline size_t build_data_headers(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                          size_t payload_len) noexcept
{
    const opcode_info& oi = info(b.op);
    const size_t hdr = sizeof(bth) + oi.ext_len;
    if (!oi.has_msg || out.size() < hdr + payload_len) {
        return 0;
    }
    // Field by field straight into the frame: no header assembled on the stack first.
    using detail::put;
    uint8_t* p = out.data();
    put(p, offsetof(bth, version), k_version);
    put(p, offsetof(bth, op), b.op);
    put(p, offsetof(bth, flags), be16_t::from_host(b.flags));
    put(p, offsetof(bth, dst_conn), be32_t::from_host(b.dst_conn));
    put(p, offsetof(bth, psn), be32_t::from_host(b.psn));
    put(p, offsetof(bth, path), b.path);
    put(p, offsetof(bth, plane), b.plane);
    put(p, offsetof(bth, reserved), be16_t{});
    put(p, offsetof(bth, tx_ts), be32_t::from_host(b.tx_ts));
    p += sizeof(bth);
    put(p, offsetof(msg_header, stream), be16_t::from_host(m.stream));
    put(p, offsetof(msg_header, reserved), be16_t{});
    put(p, offsetof(msg_header, msn), be32_t::from_host(m.msn));
    put(p, offsetof(msg_header, ssn), be32_t::from_host(m.ssn));
    put(p, offsetof(msg_header, recv_seq), be32_t::from_host(m.recv_seq));
    put(p, offsetof(msg_header, msg_len), be32_t::from_host(m.msg_len));
    put(p, offsetof(msg_header, offset), be32_t::from_host(m.offset));
    p += sizeof(msg_header);
    if (oi.has_reth) {
        put(p, offsetof(reth, va), be64_t::from_host(m.va));
        put(p, offsetof(reth, rkey), be32_t::from_host(m.rkey));
        put(p, offsetof(reth, rate_hint_mbps), be32_t::from_host(m.read_hint_mbps));
        p += sizeof(reth);
    }
    if (oi.has_imm) {
        put(p, offsetof(imm_header, imm), be32_t::from_host(m.imm));
    }
    return hdr;
}

// A data packet's headers are the same for every packet of its message but for these
// fields: a sender copies a previous packet's headers (k_max_data_header bytes, a fixed
// size the compiler copies in a few moves) and rewrites only them.
inline constexpr size_t k_max_data_header = sizeof(bth) + sizeof(msg_header) + sizeof(reth) + sizeof(imm_header);

inline void patch_data_header(uint8_t* p, const bth_fields& b, uint32_t offset) noexcept
{
    using detail::put;
    put(p, offsetof(bth, flags), be16_t::from_host(b.flags));
    put(p, offsetof(bth, psn), be32_t::from_host(b.psn));
    put(p, offsetof(bth, path), b.path);
    put(p, offsetof(bth, plane), b.plane);
    put(p, offsetof(bth, tx_ts), be32_t::from_host(b.tx_ts));
    put(p + sizeof(bth), offsetof(msg_header, offset), be32_t::from_host(offset));
}

// Inline: one per ACK, and the ACK header is built on the caller's stack just before.
inline size_t build_ack(std::span<uint8_t> out, const bth_fields& b, const ack_header& a) noexcept
{
    if (out.size() < sizeof(bth) + sizeof(ack_header)) {
        return 0;
    }
    detail::store(out.data(), detail::make_bth(b));
    detail::store(out.data() + sizeof(bth), a);
    return sizeof(bth) + sizeof(ack_header);
}

} // namespace metaroce::wire
