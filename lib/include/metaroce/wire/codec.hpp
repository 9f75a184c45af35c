// Parsing and building of MetaRoCE transport packets (the UDP payload).
// parse() never trusts the input: every length is checked and anything malformed is
// rejected with a reason the caller counts.
#pragma once

#include <cstddef>
#include <cstdint>
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
struct packet_view {
    opcode op{};
    uint16_t flags = 0;
    uint32_t dst_conn = 0;
    uint32_t psn = 0;
    uint8_t path = 0;
    uint8_t plane = 0;
    uint32_t tx_ts = 0;
    // message header (data opcodes)
    uint16_t stream = 0;
    uint32_t msn = 0;
    uint32_t ssn = 0;
    uint32_t recv_seq = 0;
    uint32_t msg_len = 0;
    uint32_t offset = 0;
    // reth / imm
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;
    std::span<const uint8_t> payload;
    // fixed control headers, valid for their opcode only
    const ack_header* ack = nullptr;
    const nak_header* nak = nullptr;
    const hello_header* hello = nullptr;
    const close_header* close = nullptr;
    const probe_header* probe = nullptr;
    const cookie_header* cookie = nullptr;

    bool is_last() const noexcept { return (flags & bth_flag::last) != 0; }
};

struct parse_result {
    parse_error error = parse_error::none;
    packet_view pkt;
    bool ok() const noexcept { return error == parse_error::none; }
};

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
};

// Bytes of headers a data packet of this opcode carries before its payload.
constexpr size_t data_header_len(opcode op) noexcept { return sizeof(bth) + info(op).ext_len; }

// Each returns the bytes written, or 0 if `out` is too small.
size_t build_data(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                  std::span<const uint8_t> payload) noexcept;
// Writes the headers only; the caller places payload_len bytes right after them.
size_t build_data_headers(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                          size_t payload_len) noexcept;
size_t build_ack(std::span<uint8_t> out, const bth_fields& b, const ack_header& a) noexcept;
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

} // namespace metaroce::wire
