// What the UDP backend counts besides the core's counters. Plain integers, bumped
// by the one thread that polls the node.
#pragma once

#include <array>
#include <cstdint>

namespace metaroce::udp {

struct udp_counters {
    uint64_t rx_datagrams = 0;      // handed to the core
    uint64_t rx_bytes = 0;          // UDP payload bytes of those
    uint64_t rx_malformed = 0;      // dropped here: shorter than a BTH, or longer than any packet
    uint64_t rx_injected_drops = 0; // dropped by test_drop_rate
    uint64_t rx_ce = 0;             // arrived with ECN CE
    uint64_t rx_kernel_drops = 0;   // lost in a full socket receive buffer (SO_RXQ_OVFL)
    std::array<uint64_t, 8> rx_plane_datagrams{}; // of rx_datagrams, per plane
    uint64_t rx_gro_runs = 0;       // coalesced receives (UDP_GRO), split into datagrams
    uint64_t rx_syscalls = 0;       // recvmmsg calls that returned datagrams
    uint64_t tx_datagrams = 0;
    uint64_t tx_bytes = 0;
    uint64_t tx_would_block = 0;    // sendmmsg took fewer than offered: the rest waits
    uint64_t tx_errors = 0;         // refused by the kernel (unreachable, ...): dropped
    uint64_t tx_bad_frame = 0;      // the core named an unknown plane or an empty frame
    uint64_t tx_syscalls = 0;       // sendmmsg calls
    uint64_t tx_gso_sends = 0;      // UDP_SEGMENT sends (several datagrams in one)
    uint64_t tx_gso_disabled = 0;   // 1 once the kernel refused GSO (then one by one)
    uint64_t sport_sockets = 0;     // source-port sockets bound so far
    uint64_t sport_moved = 0;       // of those, bound to another port than the slot's own
    uint64_t loops = 0;             // poll() calls
    uint64_t busy_loops = 0;        // poll() calls that did work
};

} // namespace metaroce::udp
