// What a driver hands the core with a received packet, and what the core hands
// back with a packet to send. The driver owns addresses, Ethernet/IP/UDP and ECN bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace metaroce {

struct rx_meta {
    uint32_t src_addr = 0;   // sender node (IPv4 of its plane-0 port, host order)
    uint8_t plane = 0;       // port the packet arrived on
    uint16_t udp_sport = 0;
    bool ce = false;         // IP ECN field was CE
};

struct tx_frame {
    std::span<uint8_t> buf;  // where the core writes the UDP payload
    size_t len = 0;          // bytes written
    uint32_t dst_addr = 0;
    uint8_t plane = 0;       // port to send on
    uint16_t udp_sport = 0;  // path entropy
    bool ect = true;         // mark ECN-capable (ECT(0))
};

} // namespace metaroce
