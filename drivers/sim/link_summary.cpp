#include "sim/link_summary.hpp"

#include <algorithm>

namespace metaroce::sim {

namespace {
struct max_mean {
    uint64_t max = 0;
    uint64_t sum = 0;
    uint64_t n = 0;
    void add(uint64_t v) noexcept
    {
        max = std::max(max, v);
        sum += v;
        ++n;
    }
    double ratio() const noexcept { return sum == 0 ? 0 : double(max) * double(n) / double(sum); }
};
} // namespace

void summarize_links(const topology& topo, const long_haul_params& lh, sim_result& r)
{
    r.spread.plane_tx_bytes.assign(topo.planes(), 0);
    r.spread.host_up_bytes.assign(topo.planes(), std::vector<uint64_t>(topo.hosts(), 0));
    r.spread.leaf_up_bytes.assign(topo.planes(), std::vector<std::vector<uint64_t>>(
                                                     topo.leaves(), std::vector<uint64_t>(topo.spines(), 0)));
    max_mean leaf_up;
    max_mean host_up;
    for (const link& l : topo.links()) {
        switch (l.kind) {
        case link_kind::host_up:
            r.spread.plane_tx_bytes[l.plane] += l.stats.tx_bytes;
            r.spread.host_up_bytes[l.plane][l.from] = l.stats.tx_bytes;
            if (l.stats.tx_bytes != 0) {
                host_up.add(l.stats.tx_bytes);
            }
            break;
        case link_kind::leaf_up:
            leaf_up.add(l.stats.tx_bytes);
            if (l.from < topo.leaves() && l.to < topo.spines()) {
                r.spread.leaf_up_bytes[l.plane][l.from][l.to] = l.stats.tx_bytes;
            }
            break;
        default:
            break;
        }
    }
    r.spread.leaf_up_max_over_mean = leaf_up.ratio();
    r.spread.host_up_max_over_mean = host_up.ratio();
    if (!topo.long_haul()) {
        return;
    }
    for (uint32_t p = 0; p < topo.planes(); ++p) {
        for (uint32_t s = 0; s < topo.spines(); ++s) {
            for (uint32_t dir = 0; dir < 2; ++dir) {
                const link& l = topo.at(topo.long_haul_link(p, s, dir));
                route_summary rs;
                rs.plane = p;
                rs.spine = s;
                rs.from_site = dir;
                rs.gbps = p == 0 && s < lh.slow_routes ? lh.slow_gbps : lh.gbps;
                rs.tx_bytes = l.stats.tx_bytes;
                rs.ecn_marked = l.stats.ecn_marked;
                rs.buffer_drops = l.stats.buffer_drops;
                rs.max_backlog_bytes = l.stats.max_backlog_bytes;
                r.long_haul.push_back(rs);
            }
        }
    }
}

} // namespace metaroce::sim
