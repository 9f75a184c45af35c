// Path and plane health (spec 5.6, 5.8, 5.9): what a timeout does to a path's route,
// failing and probing paths, declaring planes dead and re-admitting them. The NIC side
// owns plane selection; applications never see any of it.
#include <algorithm>
#include <cmath>

#include "endpoint_impl.hpp"

namespace metaroce {

using namespace detail;

// Timeouts a path may take before they count against its route (spec 5.6): none on a
// clean fabric. Under random loss that hits the connection's other paths alike (their
// resends show it), a streak of timeouts is a matter of chance, not a broken route, so a
// few are allowed: as many as make a streak of that length unlikely (< 1/1000) by chance.
uint32_t endpoint::impl::loss_slack(const connection& c, uint32_t path) const noexcept
{
    // Busy spells past (every path's, settled ones were healthy when they settled) and
    // the current spells of the other paths.
    uint64_t tx = c.settled_tx;
    uint64_t resent = c.settled_retx + c.copy_resends;
    for (uint32_t i = 0; i < c.ptx.size(); ++i) {
        const path_flight& f = c.fl(c.ptx[i]);
        // Siblings that are themselves failing (timing out, or losing packet after packet
        // to RACK without delivering) measure their route, not the fabric's random loss.
        if (i != path && f.timeouts == 0 && f.rack_strikes < k_rack_strikes) {
            tx += f.tx_packets;
            resent += f.retransmits;
        }
    }
    if (tx < 64) {
        // Too little seen to tell chance from a broken route. With other paths to carry
        // the data the first timeout is not held against the route (a connection's first
        // round trip carries one packet, and at 10 % loss that packet and its probe are
        // both lost one time in a hundred); a lone path's only remedy is a new route.
        return c.ptx.size() > 1 ? 1 : 0;
    }
    const double q = double(resent) / double(tx);
    if (q < 0.005) {
        return 0;
    }
    // A tail is lost when its probe or the probe's ACK is: about 2q per timeout.
    const double streak = std::log(1e-3) / std::log(std::min(0.5, 2 * q));
    return uint32_t(std::min(6.0, std::ceil(streak))) - 1;
}

bool endpoint::impl::plane_usable(uint8_t plane) const noexcept
{
    return plane < plane_tab.size() && plane_tab[plane].admin_up && plane_tab[plane].detected_up;
}

// The plane a path should be on: its home if usable, else the next usable one after it.
uint8_t endpoint::impl::pick_plane(const connection& c, uint8_t from, bool skip_from) const noexcept
{
    for (uint32_t k = skip_from ? 1 : 0; k < c.planes; ++k) {
        const uint8_t p = uint8_t((from + k) % c.planes);
        if (plane_usable(p)) {
            return p;
        }
    }
    return from; // nothing usable: stay, timeouts will tell
}

void endpoint::impl::reroute(connection& c, uint32_t path, uint8_t plane) noexcept
{
    path_tx& p = c.ptx[path];
    p.plane = plane;
    // A new epoch must mean a new port (spec 5.6): with few ports two epochs can collide.
    const uint16_t old = p.udp_sport;
    do {
        p.udp_sport = path_entropy(c, path, ++p.epoch);
    } while (p.udp_sport == old && cfg.entropy_ports > 1);
    ++stats.reroutes;
}

void endpoint::impl::request_probe(connection& c, uint32_t path) noexcept
{
    path_tx& p = c.ptx[path];
    if (!p.probe_pending) {
        p.probe_pending = true;
        ++c.probes_pending;
    }
    mark_ready(c);
}

// One RTO of path `i` (its in-flight packets are already queued for resending).
// Returns false if the connection failed.
bool endpoint::impl::path_timeout(connection& c, uint32_t i, uint64_t now) noexcept
{
    const transport_config& t = cfg.transport;
    path_tx& p = c.ptx[i];
    ++stats.timeouts;
    if (c.fl(p).stalls == 0) {
        c.fl(p).silent_since = now;
    }
    ++c.fl(p).timeouts;
    // Both a count and a time: a peer descheduled for a few milliseconds on a busy host
    // must not look dead, a dead one must not keep the application waiting for ever.
    // Only data progress resets the count: a route where probes pass and data does not
    // (an MTU the fabric drops) must fail, not stall in silence (spec 5.6).
    if (++c.fl(p).stalls > t.max_timeouts && now - c.fl(p).silent_since >= t.fail_silence_ns) {
        enter_error(c, wc_status::retry_exc_err);
        return false;
    }
    // Only timeouts beyond what the connection's loss explains judge the route.
    const uint32_t slack = loss_slack(c, i);
    const uint32_t counted = c.fl(p).timeouts > slack ? c.fl(p).timeouts - slack : 0;
    if (counted > 0 && p.plane < plane_tab.size()) {
        plane_health& ph = plane_tab[p.plane];
        ++ph.timeouts;
        bool other_usable = false;
        for (uint8_t pl = 0; pl < plane_tab.size(); ++pl) {
            other_usable = other_usable || (pl != p.plane && plane_usable(pl));
        }
        // Never the last usable plane: silence on every plane says the peer, not a plane, is gone.
        if (++ph.timeouts_since_progress >= t.plane_down_after && ph.detected_up && other_usable) {
            // Several paths timed out on this plane and nothing on it made progress since:
            // take the whole plane out, for every connection, without waiting for each path.
            const uint8_t dead = p.plane;
            ph.detected_up = false;
            ++ph.downs;
            ++stats.plane_downs;
            plane_probe_deadline = std::min(plane_probe_deadline, now + t.plane_probe_ns);
            move_off_plane(dead, now);
        }
    }
    if (p.state != path_state::failed && counted > 0) {
        p.state = t.fail_after > 0 && counted >= t.fail_after ? path_state::failed : path_state::suspect;
    }
    // Every timeout takes a new route; every replane_after-th also another plane.
    const bool replane = counted > 0 && c.planes > 1 && t.replane_after > 0 && counted % t.replane_after == 0;
    if (replane) {
        reroute(c, i, pick_plane(c, p.plane, true));
    } else if (counted > 0 && t.reroute_after > 0 && counted % t.reroute_after == 0) {
        reroute(c, i, p.plane);
    }
    if (p.state == path_state::failed) {
        request_probe(c, i); // no data on it until a probe comes back
    }
    // Bounded backoff: a lossy path must not go quiet for long (loss is not congestion).
    // Only timeouts held against the route back off (spec 5.6): those the connection's
    // random loss explains are not congestion either, and cut no window.
    const uint64_t backoff = c.fl(p).rto_ns << std::min(counted, t.max_backoff_shift);
    set_rto(c, p, now + std::min(backoff, t.max_rto_ns));
    return true;
}

void endpoint::impl::move_off_plane(uint8_t plane, uint64_t now) noexcept
{
    for (auto& cp : conns) {
        if (!cp || cp->state != conn_state::established) {
            continue;
        }
        connection& c = *cp;
        // Spread the displaced paths over all usable planes, not onto the next one only:
        // one plane taking a dead plane's whole load would become the bottleneck.
        uint8_t usable[32];
        uint32_t n = 0;
        for (uint32_t pl = 0; pl < c.planes && n < 32; ++pl) {
            if (plane_usable(uint8_t(pl))) {
                usable[n++] = uint8_t(pl);
            }
        }
        bool moved = false;
        uint32_t displaced = 0;
        for (uint32_t i = 0; i < c.ptx.size(); ++i) {
            path_tx& p = c.ptx[i];
            if (p.plane != plane) {
                continue;
            }
            reroute(c, i, n == 0 ? p.plane : usable[(displaced++ + c.id) % n]);
            // What was on the dead plane is gone: resend it on the new one right away.
            requeue_in_flight(c, i);
            if (c.fl(p).inflight > 0) {
                set_rto(c, p, now + c.fl(p).rto_ns);
            }
            moved = true;
        }
        if (moved) {
            mark_ready(c);
            recompute_timer(c, now);
        }
    }
}

void endpoint::impl::move_home(uint8_t plane) noexcept
{
    for (auto& cp : conns) {
        if (!cp || cp->state != conn_state::established) {
            continue;
        }
        connection& c = *cp;
        for (uint32_t i = 0; i < c.ptx.size(); ++i) {
            path_tx& p = c.ptx[i];
            if (p.home_plane == plane && p.plane != plane) {
                reroute(c, i, plane); // what is in flight elsewhere stays valid
            }
        }
        mark_ready(c);
    }
}

void endpoint::impl::plane_probe_timer(uint64_t now) noexcept
{
    plane_probe_deadline = k_no_deadline;
    bool any_down = false;
    for (uint32_t pl = 0; pl < plane_tab.size(); ++pl) {
        if (plane_tab[pl].admin_up && !plane_tab[pl].detected_up) {
            any_down = true;
            // Probe through a few connections, round robin over them.
            uint32_t sent = 0;
            for (uint32_t n = 0; n < conns.size() && sent < 4; ++n) {
                const uint32_t idx = (probe_cursor + n) % uint32_t(conns.size());
                connection* c = conns[idx].get();
                if (c == nullptr || c->state != conn_state::established || pl >= c->planes || pl >= 32) {
                    continue;
                }
                c->plane_probes |= 1u << pl;
                mark_ready(*c);
                probe_cursor = idx + 1;
                ++sent;
            }
        }
    }
    if (any_down) {
        plane_probe_deadline = now + cfg.transport.plane_probe_ns;
    }
}

bool endpoint::impl::produce_probe(connection& c, uint64_t now, tx_frame& f) noexcept
{
    if (c.probes_pending == 0 && c.plane_probes == 0) {
        return false;
    }
    wire::probe_header ph{};
    ph.token = wire::be32_t::from_host(c.probe_token); // only the peer sees it
    if (c.plane_probes != 0) {
        const uint8_t pl = uint8_t(__builtin_ctz(c.plane_probes));
        c.plane_probes &= c.plane_probes - 1;
        // Path 0 names no particular path: the reply re-admits the plane it arrives on.
        wire::bth_fields b = bth_for(c, wire::opcode::probe, 0, pl, now);
        f.len = wire::build_probe(f.buf, b, ph);
        const uint16_t sport = path_entropy(c, 0x10000u + pl, uint32_t(plane_tab[pl].probes_sent++));
        fill_frame_route(c, pl, sport, f);
        ++stats.probes_sent;
        return f.len > 0;
    }
    for (uint32_t i = 0; i < c.ptx.size(); ++i) {
        path_tx& p = c.ptx[i];
        if (!p.probe_pending) {
            continue;
        }
        p.probe_pending = false;
        --c.probes_pending;
        wire::bth_fields b = bth_for(c, wire::opcode::probe, uint8_t(i), p.plane, now);
        f.len = wire::build_probe(f.buf, b, ph);
        fill_frame_route(c, p.plane, p.udp_sport, f);
        if (p.plane < plane_tab.size()) {
            ++plane_tab[p.plane].probes_sent;
        }
        ++stats.probes_sent;
        return f.len > 0;
    }
    return false;
}

// spec 7.6: a PROBE is answered only for a connection of its sender; the answer goes
// back the way the PROBE came and names the prober's connection.
void endpoint::impl::on_probe(const rx_meta& m, const wire::packet_view& p, uint64_t now)
{
    connection* c = find(p.dst_conn);
    if (c == nullptr || c->peer_addr != m.src_addr || c->peer_conn == k_no_conn) {
        ++(c == nullptr ? stats.rx_unknown_conn : stats.rx_wrong_peer);
        return;
    }
    heard_from_peer(*c, now);
    ctrl_reply r;
    r.op = wire::opcode::probe_ack;
    r.dst_addr = m.src_addr;
    r.dst_conn = c->peer_conn;
    r.plane = m.plane;
    r.path = p.path;
    r.udp_sport = m.udp_sport;
    r.token = p.probe->token.host();
    r.ts_echo = p.tx_ts;
    replies.push(r); // bounded: excess probes are not answered
}

void endpoint::impl::on_probe_ack(connection& cr, const rx_meta& m, const wire::packet_view& pk,
                                  uint64_t now) noexcept
{
    connection* c = &cr;
    if (c->state != conn_state::established || pk.probe->token.host() != c->probe_token) {
        ++stats.rx_bad_token; // a guessed answer must not revive a path or a plane
        return;
    }
    ++stats.probe_acks;
    // The plane it came back on works in both directions.
    if (m.plane < plane_tab.size() && plane_tab[m.plane].admin_up && !plane_tab[m.plane].detected_up) {
        plane_tab[m.plane].detected_up = true;
        plane_tab[m.plane].timeouts_since_progress = 0;
        ++stats.plane_ups;
        move_home(m.plane);
    }
    if (pk.path < c->ptx.size()) {
        path_tx& p = c->ptx[pk.path];
        if (p.state == path_state::failed && p.plane == m.plane) {
            // Its new route answers: it may carry its queued resends again, and the
            // timeouts that condemned the old route no longer count.
            p.state = path_state::suspect;
            c->fl(p).timeouts = 0;
            set_rto(*c, p, c->fl(p).inflight > 0 ? now + c->fl(p).rto_ns : k_no_deadline);
            mark_ready(*c);
        }
    }
}

} // namespace metaroce

void metaroce::endpoint::set_plane_admin(uint8_t plane, bool up, uint64_t now_ns)
{
    impl& e = *impl_;
    e.clock = now_ns;
    if (plane >= e.plane_tab.size()) {
        return;
    }
    plane_health& ph = e.plane_tab[plane];
    const bool was = e.plane_usable(plane);
    ph.admin_up = up;
    if (up) {
        ph.detected_up = true; // the operator or the link says so: trust it
        ph.timeouts_since_progress = 0;
    } else {
        ++ph.downs;
    }
    const bool is = e.plane_usable(plane);
    if (was && !is) {
        e.move_off_plane(plane, now_ns);
    } else if (!was && is) {
        e.move_home(plane);
    }
}

std::vector<metaroce::plane_info> metaroce::endpoint::planes() const
{
    std::vector<plane_info> out;
    for (uint32_t pl = 0; pl < impl_->plane_tab.size(); ++pl) {
        const plane_health& ph = impl_->plane_tab[pl];
        plane_info pi;
        pi.plane = uint8_t(pl);
        pi.admin_up = ph.admin_up;
        pi.detected_up = ph.detected_up;
        pi.timeouts = ph.timeouts;
        pi.downs = ph.downs;
        pi.probes_sent = ph.probes_sent;
        for (const auto& c : impl_->conns) {
            if (c) {
                for (const path_tx& p : c->ptx) {
                    pi.paths += p.plane == pl ? 1 : 0;
                }
            }
        }
        out.push_back(pi);
    }
    return out;
}
