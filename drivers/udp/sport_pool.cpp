#include "udp/sport_pool.hpp"

#include <cerrno>
#include <stdexcept>

#include "metaroce/wire/headers.hpp"

namespace metaroce::udp {

sport_pool::sport_pool(uint32_t addr, uint16_t slots, int buffer_bytes, uint16_t avoid_port)
    : addr_(addr), buffer_bytes_(buffer_bytes), avoid_port_(avoid_port)
{
    if (slots == 0 || slots > wire::k_udp_sport_span) {
        throw std::runtime_error("sport_slots must be 1.." + std::to_string(wire::k_udp_sport_span));
    }
    fds_.resize(slots);
    ports_.resize(slots, 0);
}

uint16_t sport_pool::slot_of(uint16_t entropy) const noexcept
{
    const uint32_t e = entropy >= wire::k_udp_sport_min ? entropy - wire::k_udp_sport_min : entropy;
    return uint16_t(e % fds_.size());
}

int sport_pool::bind_slot(uint16_t slot, udp_counters& c)
{
    const uint32_t step = uint32_t(fds_.size());
    for (uint32_t port = wire::k_udp_sport_min + slot; port <= 65535; port += step) {
        if (port == avoid_port_) {
            continue;
        }
        int fd = -1;
        try {
            fd = try_open_bound(addr_, uint16_t(port), buffer_bytes_);
            if (fd < 0) {
                continue; // EADDRINUSE: another process has it
            }
            set_ect0(fd);
        } catch (const std::exception&) {
            // Out of descriptors or the like: this packet is lost, a later one retries.
            if (fd >= 0) {
                unique_fd closer(fd);
            }
            return -1;
        }
        fds_[slot] = unique_fd(fd);
        ports_[slot] = uint16_t(port);
        ++c.sport_sockets;
        if (port != uint32_t(wire::k_udp_sport_min) + slot) {
            ++c.sport_moved;
        }
        return fd;
    }
    return -1;
}

} // namespace metaroce::udp
