// Packet layout of the RoCEv2 model. Sizes follow RoCEv2 (IBA BTH, RETH, AETH,
// ICRC) so the model pays RoCEv2's per-packet overhead on every link; the field
// widths are simplified (32-bit PSN and QPN) since nothing outside the model reads them.
//
//   BTH  12 B: opcode, flags (ack_req, connect), 2 B pad, dest QP (4), PSN (4)
//   RETH 16 B: virtual address (8), rkey (4), DMA length (4); WRITE_FIRST / WRITE_ONLY
//   AETH  4 B: syndrome (ACK or NAK kind) and 3 B pad; ACK / NAK
//   ICRC  4 B: trailer, zero here
// Connection setup stands in for the RDMA CM exchange: CM_REQ / CM_REP carry the
// sender's QP number and its first PSN in an 8-byte body.
#pragma once

#include <cstdint>
#include <cstring>

namespace metaroce::sim::rocev2 {

enum class op : uint8_t {
    write_first = 0x06,   // IBA RC opcodes
    write_middle = 0x07,
    write_last = 0x08,
    write_only = 0x0A,
    ack = 0x11,
    cnp = 0x81,           // RoCEv2 congestion notification packet
    cm_req = 0xF0,        // model of the CM handshake
    cm_rep = 0xF1,
};

enum class syndrome : uint8_t { ack = 0x00, nak_seq = 0x60, nak_access = 0x62 };

inline constexpr uint32_t k_bth = 12;
inline constexpr uint32_t k_reth = 16;
inline constexpr uint32_t k_aeth = 4;
inline constexpr uint32_t k_icrc = 4;
inline constexpr uint32_t k_cnp_body = 16; // reserved bytes of a CNP
inline constexpr uint32_t k_cm_body = 8;
inline constexpr uint8_t k_flag_ack_req = 1;

struct bth {
    op opcode = op::ack;
    uint8_t flags = 0;
    uint32_t dst_qp = 0;
    uint32_t psn = 0;
};

inline void put32(uint8_t* p, uint32_t v) noexcept { std::memcpy(p, &v, 4); }
inline void put64(uint8_t* p, uint64_t v) noexcept { std::memcpy(p, &v, 8); }
inline uint32_t get32(const uint8_t* p) noexcept
{
    uint32_t v = 0;
    std::memcpy(&v, p, 4);
    return v;
}
inline uint64_t get64(const uint8_t* p) noexcept
{
    uint64_t v = 0;
    std::memcpy(&v, p, 8);
    return v;
}

inline void put_bth(uint8_t* p, const bth& h) noexcept
{
    p[0] = uint8_t(h.opcode);
    p[1] = h.flags;
    p[2] = 0;
    p[3] = 0;
    put32(p + 4, h.dst_qp);
    put32(p + 8, h.psn);
}

inline bth get_bth(const uint8_t* p) noexcept
{
    return bth{op(p[0]), p[1], get32(p + 4), get32(p + 8)};
}

constexpr bool has_reth(op o) noexcept { return o == op::write_first || o == op::write_only; }
constexpr bool is_write(op o) noexcept
{
    return o == op::write_first || o == op::write_middle || o == op::write_last ||
           o == op::write_only;
}
constexpr bool ends_message(op o) noexcept { return o == op::write_last || o == op::write_only; }

// Transport bytes of a data packet carrying `payload` bytes.
constexpr uint32_t data_len(op o, uint32_t payload) noexcept
{
    return k_bth + (has_reth(o) ? k_reth : 0) + payload + k_icrc;
}
inline constexpr uint32_t k_ack_len = k_bth + k_aeth + k_icrc;
inline constexpr uint32_t k_cnp_len = k_bth + k_cnp_body + k_icrc;
inline constexpr uint32_t k_cm_len = k_bth + k_cm_body + k_icrc;

// Largest packet for a given MTU: WRITE_FIRST with a full payload.
constexpr uint32_t max_packet_len(uint32_t mtu) noexcept { return data_len(op::write_first, mtu); }

} // namespace metaroce::sim::rocev2
