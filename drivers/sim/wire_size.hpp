// Bytes a packet occupies on the wire besides the transport bytes the core builds.
// This is the only place that knows the framing; links and bounds both use it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace metaroce::sim {

inline constexpr uint32_t k_eth_header_bytes = 14;
inline constexpr uint32_t k_ipv4_header_bytes = 20;
inline constexpr uint32_t k_udp_header_bytes = 8;
inline constexpr uint32_t k_fcs_bytes = 4;
inline constexpr uint32_t k_preamble_ifg_bytes = 20;
inline constexpr uint32_t k_min_frame_bytes = 64; // Ethernet pads shorter frames

// Everything a packet costs on a link except its transport bytes.
inline constexpr uint32_t k_frame_overhead_bytes =
    k_eth_header_bytes + k_ipv4_header_bytes + k_udp_header_bytes + k_fcs_bytes +
    k_preamble_ifg_bytes;

constexpr uint32_t wire_bytes(uint32_t transport_len) noexcept
{
    const uint32_t frame =
        k_eth_header_bytes + k_ipv4_header_bytes + k_udp_header_bytes + transport_len +
        k_fcs_bytes;
    return std::max(frame, k_min_frame_bytes) + k_preamble_ifg_bytes;
}

static_assert(k_frame_overhead_bytes == 66);
static_assert(wire_bytes(4096 + 60) == 4096 + 60 + 66);

} // namespace metaroce::sim
