// Node address <-> plane address of a peer. A peer listed explicitly uses its own
// addresses; every other peer is laid out like this node: its plane-p address is its
// node address plus (our plane-p address - our node address).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace metaroce::udp {

class peer_map {
public:
    peer_map(const std::vector<uint32_t>& own, const std::vector<std::vector<uint32_t>>& listed)
        : listed_(listed)
    {
        for (uint32_t a : own) {
            offset_.push_back(a - own[0]);
        }
        for (const auto& p : listed_) {
            if (p.size() != own.size()) {
                throw std::runtime_error("a listed peer needs one address per plane (" +
                                         std::to_string(own.size()) + ")");
            }
        }
    }

    uint32_t plane_ip(uint32_t node, uint8_t plane) const noexcept
    {
        for (const auto& p : listed_) { // few peers, and only when listed at all
            if (p[0] == node) {
                return p[plane];
            }
        }
        return node + offset_[plane];
    }

    uint32_t node_of(uint32_t ip, uint8_t plane) const noexcept
    {
        for (const auto& p : listed_) {
            if (p[plane] == ip) {
                return p[0];
            }
        }
        return ip - offset_[plane];
    }

private:
    std::vector<uint32_t> offset_;
    std::vector<std::vector<uint32_t>> listed_;
};

} // namespace metaroce::udp
