// What a driver hands the core with a received packet, and what the core hands
// back with a packet to send. The driver owns addresses, Ethernet/IP/UDP and ECN bits.
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <span>

namespace metaroce {

struct rx_meta {
    uint32_t src_addr = 0;   // sender node (IPv4 of its plane-0 port, host order)
    uint8_t plane = 0;       // port the packet arrived on
    uint16_t udp_sport = 0;
    bool ce = false;         // IP ECN field was CE
};

// A piece of a data packet's payload left in registered memory (zero-copy send).
struct payload_ref {
    const uint8_t* host = nullptr;
    uint32_t len = 0;
};
// Pieces one packet may be described by; a payload that needs more is copied.
inline constexpr size_t k_max_payload_refs = 4;

struct tx_frame {
    std::span<uint8_t> buf;  // where the core writes the UDP payload
    size_t len = 0;          // bytes written
    // Zero copy: a driver that can send scattered frames sets want_payload_ref; the core
    // may then write only the headers into buf and describe the payload, which follows
    // buf[0, len) on the wire, by reference (payload_refs pieces, payload_len bytes).
    // The pieces point into registered regions; they stay valid until the region is
    // deregistered, so the driver must hold deregistration until its frames are sent.
    bool want_payload_ref = false;
    uint8_t payload_refs = 0;
    uint32_t payload_len = 0;
    std::array<payload_ref, k_max_payload_refs> payload{};
    uint32_t dst_addr = 0;
    uint8_t plane = 0;       // port to send on
    uint16_t udp_sport = 0;  // path entropy
    bool ect = true;         // mark ECN-capable (ECT(0))
    // Set by the driver before poll_tx: planes whose port already holds its share of
    // queued packets (bit p = plane p). New data goes on another plane while one has
    // room (spec 5.3); 0 = no such word from the driver.
    uint32_t busy_planes = 0;
    // Set by the driver: build data ahead of the ACKs waiting (spec 5.4, the held pass's
    // reply).
    bool data_first = false;

    size_t wire_len() const noexcept { return len + payload_len; } // UDP payload bytes
    // A data packet, not an ACK, NAK or control: BTH byte 1 is the opcode, and data
    // opcodes sit below ACK's 0x10 (wire/headers.hpp checks it).
    bool is_data() const noexcept { return len > 1 && buf[1] < k_first_ctrl_opcode; }
    static constexpr uint8_t k_first_ctrl_opcode = 0x10;
};

} // namespace metaroce
