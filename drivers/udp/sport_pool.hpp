// The UDP source ports of one plane. The core picks a path's entropy e in 49152..65535
// (spec 2.3); a UDP socket sends from the one port it is bound to, so each distinct
// port needs a socket. `slots` sockets per plane, bound on first use: e goes out from
// 49152 + (e - 49152) % slots, or, when another process holds that port, from the next
// free port of the same residue class (so the mapping stays a function of e).
#pragma once

#include <cstdint>
#include <vector>

#include "udp/sockets.hpp"
#include "udp/udp_counters.hpp"

namespace metaroce::udp {

class sport_pool {
public:
    sport_pool(uint32_t addr, uint16_t slots, int buffer_bytes, uint16_t avoid_port);

    // The socket that sends entropy e; -1 when every port of its class is taken.
    int fd_for(uint16_t entropy, udp_counters& c)
    {
        const uint16_t slot = slot_of(entropy);
        const int fd = fds_[slot].get();
        return fd >= 0 ? fd : bind_slot(slot, c);
    }
    uint16_t slot_of(uint16_t entropy) const noexcept;
    // The port a slot sends from (0: not bound yet).
    uint16_t port_of_slot(uint16_t slot) const noexcept { return ports_[slot]; }
    uint16_t slots() const noexcept { return uint16_t(fds_.size()); }

private:
    int bind_slot(uint16_t slot, udp_counters& c);

    uint32_t addr_;
    int buffer_bytes_;
    uint16_t avoid_port_;
    std::vector<unique_fd> fds_;
    std::vector<uint16_t> ports_;
};

} // namespace metaroce::udp
