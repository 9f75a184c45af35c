// One row per opcode: which headers follow the BTH and what the packet means to the
// reliability layer. The codec and the engine read this table instead of switching.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "metaroce/wire/headers.hpp"

namespace metaroce::wire {

struct opcode_info {
    std::string_view name;
    bool valid = false;
    bool has_msg = false;     // msg_header follows the BTH
    bool has_reth = false;    // reth follows
    bool has_imm = false;     // imm_header follows
    bool has_payload = false; // data bytes may follow the headers
    bool reliable = false;    // consumes a PSN on its path and is acknowledged
    bool consumes_recv = false;
    size_t ext_len = 0;       // fixed header bytes after the BTH
};

namespace detail {
constexpr opcode_info data_op(std::string_view name, bool reth_, bool imm_, bool payload, bool recv)
{
    opcode_info i;
    i.name = name;
    i.valid = true;
    i.has_msg = true;
    i.has_reth = reth_;
    i.has_imm = imm_;
    i.has_payload = payload;
    i.reliable = true;
    i.consumes_recv = recv;
    i.ext_len = sizeof(msg_header) + (reth_ ? sizeof(reth) : 0) + (imm_ ? sizeof(imm_header) : 0);
    return i;
}
constexpr opcode_info fixed_op(std::string_view name, size_t ext)
{
    opcode_info i;
    i.name = name;
    i.valid = true;
    i.ext_len = ext;
    return i;
}
constexpr std::array<opcode_info, 256> make_table()
{
    std::array<opcode_info, 256> t{};
    t[uint8_t(opcode::write)] = data_op("WRITE", true, false, true, false);
    t[uint8_t(opcode::write_imm)] = data_op("WRITE_IMM", true, true, true, true);
    t[uint8_t(opcode::send)] = data_op("SEND", false, false, true, true);
    t[uint8_t(opcode::send_imm)] = data_op("SEND_IMM", false, true, true, true);
    t[uint8_t(opcode::read_req)] = data_op("READ_REQ", true, false, false, false);
    t[uint8_t(opcode::read_resp)] = data_op("READ_RESP", false, false, true, false);
    t[uint8_t(opcode::ack)] = fixed_op("ACK", sizeof(ack_header));
    t[uint8_t(opcode::nak)] = fixed_op("NAK", sizeof(nak_header));
    t[uint8_t(opcode::connect)] = fixed_op("CONNECT", sizeof(hello_header));
    t[uint8_t(opcode::accept)] = fixed_op("ACCEPT", sizeof(hello_header));
    t[uint8_t(opcode::close)] = fixed_op("CLOSE", sizeof(close_header));
    t[uint8_t(opcode::close_ack)] = fixed_op("CLOSE_ACK", sizeof(close_header));
    t[uint8_t(opcode::probe)] = fixed_op("PROBE", sizeof(probe_header));
    t[uint8_t(opcode::probe_ack)] = fixed_op("PROBE_ACK", sizeof(probe_header));
    t[uint8_t(opcode::cookie)] = fixed_op("COOKIE", sizeof(cookie_header));
    return t;
}
} // namespace detail

inline constexpr std::array<opcode_info, 256> k_opcodes = detail::make_table();

constexpr const opcode_info& info(opcode op) noexcept { return k_opcodes[uint8_t(op)]; }

} // namespace metaroce::wire
