#include "sim/topology.hpp"

#include "metaroce/wire/headers.hpp"
#include "sim/rng.hpp"

namespace metaroce::sim {

topology::topology(const topology_params& p, uint64_t seed, const long_haul_params& lh)
    : hosts_(p.hosts),
      planes_(p.planes),
      leaves_(p.leaves()),
      spines_(p.leaves() > 1 ? p.spines_per_plane : 0),
      hosts_per_leaf_(p.hosts_per_leaf),
      site_b_leaf_(lh.enabled() && lh.site_b_leaf < leaves_ ? lh.site_b_leaf : 0),
      per_plane_(2 * hosts_ + 2 * leaves_ * spines_ + (site_b_leaf_ != 0 ? 2 * spines_ : 0))
{
    links_.resize(size_t(planes_) * per_plane_);
    const double ps_per_byte = 8000.0 / p.link_gbps;
    auto init = [&](uint32_t id, link_kind kind, uint32_t plane, uint32_t from, uint32_t to) {
        link& l = links_[id];
        l.kind = kind;
        l.plane = uint8_t(plane);
        l.from = from;
        l.to = to;
        l.ps_per_byte = ps_per_byte;
        l.delay = from_ns(p.link_delay_ns);
        // Only switch ports have a shared buffer and an ECN marker.
        if (kind != link_kind::host_up) {
            l.buffer_bytes = p.switch_buffer_bytes;
            l.ecn_threshold = p.ecn_threshold_bytes;
        }
    };
    for (uint32_t pl = 0; pl < planes_; ++pl) {
        for (uint32_t h = 0; h < hosts_; ++h) {
            init(host_up(pl, h), link_kind::host_up, pl, h, leaf_of(h));
            init(host_down(pl, h), link_kind::host_down, pl, leaf_of(h), h);
        }
        for (uint32_t lf = 0; lf < leaves_; ++lf) {
            for (uint32_t s = 0; s < spines_; ++s) {
                init(leaf_up(pl, lf, s), link_kind::leaf_up, pl, lf, s);
                init(spine_down(pl, s, lf), link_kind::spine_down, pl, s, lf);
            }
        }
        for (uint32_t s = 0; site_b_leaf_ != 0 && s < spines_; ++s) {
            const bool slow = pl == 0 && s < lh.slow_routes;
            for (uint32_t dir = 0; dir < 2; ++dir) {
                const uint32_t id = long_haul_link(pl, s, dir);
                init(id, link_kind::long_haul, pl, dir, s);
                links_[id].delay = from_ns(lh.delay_ns);
                links_[id].ps_per_byte = 8000.0 / (slow ? lh.slow_gbps : lh.gbps);
            }
        }
    }
    leaf_seed_.resize(size_t(planes_) * leaves_);
    for (size_t i = 0; i < leaf_seed_.size(); ++i) {
        leaf_seed_[i] = derive_seed(seed, 0xEC3B0000ull + i);
    }
}

uint32_t topology::ecmp_spine(uint32_t plane, uint32_t leaf, uint32_t src_host, uint32_t dst_host,
                              uint16_t udp_sport) const noexcept
{
    const uint64_t addrs = (uint64_t(plane_addr(src_host, plane)) << 32) | plane_addr(dst_host, plane);
    const uint64_t ports = (uint64_t(udp_sport) << 24) | (uint64_t(wire::k_udp_dst_port) << 8) |
                           k_ip_proto_udp;
    const uint64_t h = splitmix64(splitmix64(addrs ^ leaf_seed_[size_t(plane) * leaves_ + leaf]) ^
                                  ports);
    // Multiply-shift maps the hash onto [0, spines) without modulo bias.
    return uint32_t((unsigned __int128)(h) * spines_ >> 64);
}

} // namespace metaroce::sim
