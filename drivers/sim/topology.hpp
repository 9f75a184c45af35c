// The leaf-spine planes as an array of directed links, and the routing between them.
// Plane p, host h has address 10.p.(h>>8).(h&255) for ECMP hashing; the core only
// sees plane-0 addresses 0x0A000000 | h.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/link.hpp"
#include "sim/scenario.hpp"

namespace metaroce::sim {

inline constexpr uint32_t k_host_addr_base = 0x0A000000;
inline constexpr uint8_t k_ip_proto_udp = 17;

constexpr uint32_t host_addr(uint32_t host) noexcept { return k_host_addr_base | host; }
constexpr uint32_t plane_addr(uint32_t host, uint32_t plane) noexcept
{
    return k_host_addr_base | (plane << 16) | host;
}

class topology {
public:
    topology(const topology_params& p, uint64_t seed, const long_haul_params& lh = {});

    uint32_t hosts() const noexcept { return hosts_; }
    uint32_t planes() const noexcept { return planes_; }
    uint32_t leaves() const noexcept { return leaves_; }
    uint32_t spines() const noexcept { return spines_; }
    uint32_t leaf_of(uint32_t host) const noexcept { return host / hosts_per_leaf_; }
    // Scale-across: which site a leaf is in (always 0 without long-haul links).
    uint32_t site_of_leaf(uint32_t leaf) const noexcept
    {
        return site_b_leaf_ != 0 && leaf >= site_b_leaf_ ? 1 : 0;
    }
    bool long_haul() const noexcept { return site_b_leaf_ != 0; }

    // Link ids.
    uint32_t host_up(uint32_t plane, uint32_t host) const noexcept { return base(plane) + host; }
    uint32_t host_down(uint32_t plane, uint32_t host) const noexcept
    {
        return base(plane) + hosts_ + host;
    }
    uint32_t leaf_up(uint32_t plane, uint32_t leaf, uint32_t spine) const noexcept
    {
        return base(plane) + 2 * hosts_ + leaf * spines_ + spine;
    }
    uint32_t spine_down(uint32_t plane, uint32_t spine, uint32_t leaf) const noexcept
    {
        return base(plane) + 2 * hosts_ + leaves_ * spines_ + spine * leaves_ + leaf;
    }
    // from_site 0: site A to site B.
    uint32_t long_haul_link(uint32_t plane, uint32_t spine, uint32_t from_site) const noexcept
    {
        return base(plane) + 2 * hosts_ + 2 * leaves_ * spines_ + 2 * spine + from_site;
    }

    // Spine a leaf picks for a flow: a seeded hash of the 5-tuple, as switches do.
    uint32_t ecmp_spine(uint32_t plane, uint32_t leaf, uint32_t src_host, uint32_t dst_host,
                        uint16_t udp_sport) const noexcept;

    link& at(uint32_t id) noexcept { return links_[id]; }
    const link& at(uint32_t id) const noexcept { return links_[id]; }
    const std::vector<link>& links() const noexcept { return links_; }
    std::vector<link>& links() noexcept { return links_; }

private:
    uint32_t base(uint32_t plane) const noexcept { return plane * per_plane_; }

    uint32_t hosts_;
    uint32_t planes_;
    uint32_t leaves_;
    uint32_t spines_;
    uint32_t hosts_per_leaf_;
    uint32_t site_b_leaf_;
    uint32_t per_plane_;
    std::vector<link> links_;
    std::vector<uint64_t> leaf_seed_; // plane * leaves + leaf
};

} // namespace metaroce::sim
