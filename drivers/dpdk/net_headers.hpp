// Ethernet, IPv4 and UDP headers as they sit on the wire: packed, big-endian
// typed (wire::be16_t/be32_t refuse host-order assignment) and size-checked.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "metaroce/wire/be.hpp"

namespace metaroce::dpdk {

using wire::be16_t;
using wire::be32_t;

// Trivial (value-initialise it, {}, to zero) so it can sit in packed headers.
struct mac_addr {
    std::array<uint8_t, 6> bytes;
    friend bool operator==(const mac_addr&, const mac_addr&) = default;
    bool is_zero() const noexcept { return bytes == std::array<uint8_t, 6>{}; }
} __attribute__((packed));
static_assert(sizeof(mac_addr) == 6);
inline constexpr mac_addr k_broadcast_mac{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};

struct eth_header {
    mac_addr dst;
    mac_addr src;
    be16_t ether_type;
} __attribute__((packed));
static_assert(sizeof(eth_header) == 14);

inline constexpr uint16_t k_ether_type_ipv4 = 0x0800;

struct ipv4_header {
    uint8_t version_ihl;      // 0x45: version 4, 5 words, no options
    uint8_t tos;              // DSCP << 2 | ECN
    be16_t total_length;
    be16_t packet_id;
    be16_t fragment_offset;   // flags and offset; DF set, never fragmented
    uint8_t ttl;
    uint8_t protocol;
    be16_t checksum;
    be32_t src_addr;
    be32_t dst_addr;
} __attribute__((packed));
static_assert(sizeof(ipv4_header) == 20);

inline constexpr uint8_t k_ipv4_version_ihl = 0x45;
inline constexpr uint8_t k_ip_proto_udp = 17;
inline constexpr uint16_t k_ipv4_dont_fragment = 0x4000;
inline constexpr uint8_t k_default_ttl = 64;

// RFC 3168 ECN codepoints in the low two bits of the TOS byte.
namespace ecn {
inline constexpr uint8_t mask = 0x03;
inline constexpr uint8_t not_ect = 0x00;
inline constexpr uint8_t ect0 = 0x02;
inline constexpr uint8_t ce = 0x03;
} // namespace ecn

struct udp_header {
    be16_t src_port;
    be16_t dst_port;
    be16_t length;
    be16_t checksum;          // 0: not computed (allowed over IPv4)
} __attribute__((packed));
static_assert(sizeof(udp_header) == 8);

// Every metaroce frame: Ethernet, IPv4 without options, UDP, then the transport.
struct frame_headers {
    eth_header eth;
    ipv4_header ip;
    udp_header udp;
} __attribute__((packed));
static_assert(sizeof(frame_headers) == 42);

inline constexpr size_t k_l2_len = sizeof(eth_header);
inline constexpr size_t k_l3_len = sizeof(ipv4_header);
inline constexpr size_t k_frame_overhead = sizeof(frame_headers);
// What a frame costs on the link besides the transport bytes: our headers, the FCS, the
// preamble and the inter-frame gap. The core paces rate hints in these bytes.
inline constexpr size_t k_fcs_len = 4;
inline constexpr size_t k_preamble_ifg_len = 20;
inline constexpr size_t k_wire_overhead = k_frame_overhead + k_fcs_len + k_preamble_ifg_len;

} // namespace metaroce::dpdk
