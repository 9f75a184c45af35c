#include "sim/fabric.hpp"

#include <algorithm>

#include "sim/traffic_pattern.hpp"

namespace metaroce::sim {

fabric::fabric(const scenario& s, event_queue& q, packet_pool& pool)
    : topo_(s.topology, s.seed, s.long_haul),
      q_(q),
      pool_(pool),
      // The loss chain steps once per full-size packet time of a last hop (all alike).
      loss_(s.loss, s.topology.hosts * s.topology.planes, s.seed,
            topo_.at(topo_.host_down(0, 0)).serialization(full_packet_wire_bytes(s))),
      plane_failed_(s.topology.planes, 0)
{
}

void fabric::transmit(uint32_t pkt, sim_time now)
{
    const packet_meta& m = pool_.meta(pkt);
    ++stats_.injected;
    enqueue(pkt, topo_.host_up(m.plane, m.src_host), now);
}

void fabric::enqueue(uint32_t pkt, uint32_t link_id, sim_time now)
{
    link& l = topo_.at(link_id);
    packet_meta& m = pool_.meta(pkt);
    if (link_down(l)) {
        ++l.stats.failure_drops;
        ++stats_.failure_drops;
        drop(pkt);
        return;
    }
    const uint64_t backlog = l.backlog_bytes(now);
    if (l.buffer_bytes != 0 && backlog + m.wire_bytes > l.buffer_bytes) {
        ++l.stats.buffer_drops;
        ++stats_.buffer_drops;
        drop(pkt);
        return;
    }
    if (l.ecn_threshold != 0 && m.ect && !m.ce && backlog > l.ecn_threshold) {
        m.ce = true;
        ++l.stats.ecn_marked;
        ++stats_.ecn_marked;
    }
    l.stats.max_backlog_bytes = std::max(l.stats.max_backlog_bytes, backlog);
    ++l.stats.tx_packets;
    l.stats.tx_bytes += m.wire_bytes;
    const sim_time start = std::max(now, l.busy_until);
    l.busy_until = start + l.serialization(m.wire_bytes);
    q_.push(l.busy_until + l.delay, event_kind::arrival, pkt, link_id);
}

hop_result fabric::on_arrival(uint32_t pkt, uint32_t link_id, sim_time now)
{
    link& l = topo_.at(link_id);
    const packet_meta& m = pool_.meta(pkt);
    // A link that failed while the packet was on it loses the packet too.
    if (link_down(l)) {
        ++l.stats.failure_drops;
        ++stats_.failure_drops;
        drop(pkt);
        return hop_result::dropped;
    }
    const uint32_t dst_leaf = topo_.leaf_of(m.dst_host);
    switch (l.kind) {
    case link_kind::host_up:
        if (l.to == dst_leaf) {
            enqueue(pkt, topo_.host_down(m.plane, m.dst_host), now);
        } else {
            const uint32_t spine = topo_.ecmp_spine(m.plane, l.to, m.src_host, m.dst_host, m.udp_sport);
            enqueue(pkt, topo_.leaf_up(m.plane, l.to, spine), now);
        }
        return hop_result::forwarded;
    case link_kind::leaf_up: {
        // Between the sites the spine sends over its long-haul link first.
        const uint32_t from_site = topo_.site_of_leaf(l.from);
        if (from_site != topo_.site_of_leaf(dst_leaf)) {
            enqueue(pkt, topo_.long_haul_link(m.plane, l.to, from_site), now);
        } else {
            enqueue(pkt, topo_.spine_down(m.plane, l.to, dst_leaf), now);
        }
        return hop_result::forwarded;
    }
    case link_kind::long_haul:
        enqueue(pkt, topo_.spine_down(m.plane, l.to, dst_leaf), now);
        return hop_result::forwarded;
    case link_kind::spine_down:
        enqueue(pkt, topo_.host_down(m.plane, m.dst_host), now);
        return hop_result::forwarded;
    case link_kind::host_down:
        // Random loss is applied once per packet, here on its last hop.
        if (loss_.drop(m.plane * topo_.hosts() + m.dst_host, now)) {
            ++l.stats.loss_drops;
            ++stats_.loss_drops;
            drop(pkt);
            return hop_result::dropped;
        }
        ++stats_.delivered;
        return hop_result::delivered;
    }
    return hop_result::dropped;
}

std::vector<uint32_t> fabric::fault_links(const fault_event& e) const
{
    const bool is_switch =
        e.action == fault_action::fail_switch || e.action == fault_action::restore_switch;
    if (is_switch) {
        // Every link of the switch, both directions.
        std::vector<uint32_t> ids;
        if (e.spine) {
            for (uint32_t l = 0; l < topo_.leaves(); ++l) {
                ids.push_back(topo_.leaf_up(e.plane, l, *e.spine));
                ids.push_back(topo_.spine_down(e.plane, *e.spine, l));
            }
            return ids;
        }
        for (uint32_t h = 0; h < topo_.hosts(); ++h) {
            if (topo_.leaf_of(h) == *e.leaf) {
                ids.push_back(topo_.host_up(e.plane, h));
                ids.push_back(topo_.host_down(e.plane, h));
            }
        }
        for (uint32_t s = 0; s < topo_.spines(); ++s) {
            ids.push_back(topo_.leaf_up(e.plane, *e.leaf, s));
            ids.push_back(topo_.spine_down(e.plane, s, *e.leaf));
        }
        return ids;
    }
    if (e.host) {
        return {topo_.host_up(e.plane, *e.host), topo_.host_down(e.plane, *e.host)};
    }
    return {topo_.leaf_up(e.plane, *e.leaf, *e.spine), topo_.spine_down(e.plane, *e.spine, *e.leaf)};
}

void fabric::apply(const fault_event& e)
{
    switch (e.action) {
    case fault_action::fail_plane:
        plane_failed_[e.plane] = 1;
        break;
    case fault_action::restore_plane:
        plane_failed_[e.plane] = 0;
        break;
    case fault_action::fail_link:
    case fault_action::restore_link:
    case fault_action::fail_switch:
    case fault_action::restore_switch:
        for (uint32_t id : fault_links(e)) {
            topo_.at(id).failed =
                e.action == fault_action::fail_link || e.action == fault_action::fail_switch;
        }
        break;
    }
}

} // namespace metaroce::sim
