// Ethernet/IPv4/UDP encapsulation of transport packets, and the checks on receive.
// Pure functions over bytes: no mbufs, no EAL, so they are testable anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "dpdk/net_headers.hpp"

namespace metaroce::dpdk {

// What the port computes for us on transmit (from its offload capabilities).
struct tx_csum_mode {
    bool ip_offload = false;   // NIC fills the IPv4 header checksum
    bool udp_offload = false;  // NIC fills the UDP checksum (we seed the pseudo-header sum)
    bool udp_software = false; // no offload: compute it here (else send 0, legal over IPv4)
};

struct tx_addressing {
    mac_addr src_mac{};
    mac_addr dst_mac{};
    uint32_t src_ip = 0; // host order
    uint32_t dst_ip = 0;
    uint16_t udp_sport = 0;
    uint16_t udp_dport = 0;
    bool ect = true;
};

// Writes the 42 bytes of headers at `frame`; the payload must already sit at
// frame + k_frame_overhead. Returns the frame length.
size_t write_headers(uint8_t* frame, const tx_addressing& a, size_t payload_len,
                     const tx_csum_mode& csum) noexcept;

enum class rx_drop : uint8_t {
    none = 0,
    too_short,
    not_ipv4,          // EtherType is not IPv4 (ARP, IPv6, VLAN...)
    bad_ip_header,     // version, IHL (options) or total length inconsistent
    fragment,
    not_udp,
    bad_udp_length,
    bad_ip_checksum,
    bad_udp_checksum,
    wrong_port,        // not addressed to the metaroce UDP port
    count_,
};
std::string_view to_string(rx_drop d) noexcept;

// What the NIC already verified (mbuf ol_flags); the rest is checked in software.
struct rx_csum_state {
    bool ip_good = false;
    bool udp_good = false;
};

struct rx_parsed {
    mac_addr src_mac{};
    uint32_t src_ip = 0; // host order
    uint32_t dst_ip = 0;
    uint16_t udp_sport = 0;
    bool ce = false;
    std::span<const uint8_t> payload;
};

struct rx_result {
    rx_drop drop = rx_drop::none;
    rx_parsed pkt;
};

rx_result parse_frame(std::span<const uint8_t> frame, uint16_t udp_dport,
                      const rx_csum_state& hw) noexcept;

// Internet checksum helpers (RFC 1071), exposed for tests.
uint16_t ipv4_header_checksum(const ipv4_header& ip) noexcept;
uint16_t udp_checksum(const ipv4_header& ip, const uint8_t* udp, size_t udp_len) noexcept;
uint16_t udp_pseudo_header_sum(const ipv4_header& ip, size_t udp_len) noexcept;

} // namespace metaroce::dpdk
