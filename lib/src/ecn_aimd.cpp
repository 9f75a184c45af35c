#include <algorithm>

#include "metaroce/congestion.hpp"

namespace metaroce {

namespace {

constexpr double k_pace_headroom = 2; // packets: one being paced out, one awaiting its ACK

// One DCTCP-style round: fold the round's marked fraction into alpha, then either
// cut by alpha/2 (`congested`) or grow additively.
template <typename State>
void end_round(State& s, bool congested, double gain, double grow, double lo, double hi,
               uint64_t now, uint64_t rtt)
{
    const double frac = s.round_pkts == 0 ? 0.0 : double(s.round_ce) / double(s.round_pkts);
    s.alpha = (1 - gain) * s.alpha + gain * frac;
    if (congested) {
        s.cwnd = std::max(lo, s.cwnd * (1 - s.alpha / 2));
    } else {
        s.cwnd = std::min(hi, s.cwnd + grow);
    }
    s.round_pkts = 0;
    s.round_ce = 0;
    s.round_end_ns = now + rtt;
}

// Additive increase per reference interval rather than per round (spec 6.2): a flow whose
// base RTT is k reference RTTs grows k steps per round, so its rate grows as fast as a
// short flow's and a long-haul flow sharing a bottleneck is not starved (scale-across).
double rtt_scaled(double step, uint64_t base_rtt_ns, uint64_t reference_ns)
{
    if (reference_ns == 0 || base_rtt_ns <= reference_ns) {
        return step;
    }
    return step * double(base_rtt_ns) / double(reference_ns);
}

} // namespace

void ecn_aimd::init(path_cc_state& p) const
{
    p = path_cc_state{};
    p.cwnd = cfg_.path_cwnd_init;
}

void ecn_aimd::init(conn_cc_state& c) const
{
    c = conn_cc_state{};
    c.cwnd = std::min(cfg_.conn_cwnd_first, cfg_.conn_cwnd_init); // the blind first round trip
}

void ecn_aimd::on_hint(conn_cc_state& c, uint32_t hint_mbps, uint64_t min_rtt_ns,
                       uint32_t packet_bytes) const
{
    c.rate_hint_mbps = hint_mbps;
    if (hint_mbps != 0 && min_rtt_ns != 0 && packet_bytes != 0) {
        // The receiver's share as a window: rate x base RTT, twice over (the RTT a
        // sender sees includes its own NIC and the receiver's ACK delay). Pacing at the
        // share (spec 6.5) sets the rate; the window only bounds what a sender can have
        // in flight if its pacing runs ahead of the ACKs.
        // At a tiny RTT the share is under a packet per RTT, yet pacing needs a few packets
        // out (the receiver coalesces ACKs): never below conn_cwnd_min plus that headroom.
        const double bytes = double(hint_mbps) * 1e6 / 8 * double(min_rtt_ns) * 1e-9;
        c.hint_cwnd = std::max(cfg_.conn_cwnd_min + k_pace_headroom, 2.0 * bytes / double(packet_bytes));
    } else {
        c.hint_cwnd = 0;
    }
}

void ecn_aimd::on_ack(path_cc_state& p, conn_cc_state& c, const ack_sample& in) const
{
    ack_sample s = in;
    if (cfg_.delay_mark_ns != 0 && s.rtt_ns != 0 && s.path_min_rtt_ns != 0 &&
        s.rtt_ns > s.path_min_rtt_ns + cfg_.delay_mark_ns) {
        s.ce_pkts = std::max<uint16_t>(s.ce_pkts, std::max<uint16_t>(s.rx_pkts, 1));
    }
    on_hint(c, s.rate_hint_mbps, s.min_rtt_ns, s.packet_bytes);
    p.round_pkts += s.rx_pkts;
    p.round_ce += s.ce_pkts;
    c.round_pkts += s.rx_pkts;
    c.round_ce += s.ce_pkts;
    // Which paths reported in this connection round, and which of them saw a mark.
    if (p.conn_round_seen != c.round_id) {
        p.conn_round_seen = c.round_id;
        ++c.round_paths;
    }
    if (s.ce_pkts > 0 && p.conn_round_marked != c.round_id) {
        p.conn_round_marked = c.round_id;
        ++c.round_marked_paths;
    }
    if (s.now_ns >= p.round_end_ns) {
        end_round(p, p.round_ce > 0, cfg_.ecn_gain,
                  rtt_scaled(cfg_.additive_increase, s.path_min_rtt_ns, cfg_.ai_reference_rtt_ns),
                  cfg_.path_cwnd_min, cfg_.path_cwnd_max, s.now_ns, s.srtt_ns);
    }
    if (!c.acked) {
        // Admission (spec 6.1): the first ACK says the receiver's share, and the sender
        // takes it at once; without a hint it slow-starts from the usual initial window.
        c.acked = true;
        // The share's window is taken whole, however large: pacing at the share (spec 6.5)
        // keeps it from leaving as a burst, and a share that was stale (others' first
        // packets still on their way) is corrected by the next ACK's hint, pacing
        // included, within a round trip. Slow-starting to a large share instead would
        // take a long-haul sender many of its round trips (scale-across).
        c.cwnd = std::max(c.cwnd, cfg_.conn_cwnd_init);
        if (c.hint_cwnd > 0) {
            c.cwnd = std::max(cfg_.conn_cwnd_min, c.hint_cwnd);
            c.slow_start = false;
        }
    }
    if (c.slow_start) {
        // Start small and double per RTT until the first mark: a many-to-one burst stays
        // small before the receiver's first hints arrive, a lone flow still gets up fast.
        // Under a hint it grows only up to the hint's window and stops there: the share is
        // known, there is nothing left to probe for.
        const double cap = c.hint_cwnd > 0 ? std::max(c.cwnd, c.hint_cwnd) : cfg_.conn_cwnd_max;
        if (s.ce_pkts > 0) {
            c.slow_start = false;
        } else {
            c.cwnd = std::min({std::max(cfg_.conn_cwnd_max, c.hint_cwnd), cap, c.cwnd + s.newly_acked});
            c.slow_start = c.hint_cwnd == 0 || c.cwnd < c.hint_cwnd;
        }
    }
    if (s.now_ns >= c.round_end_ns) {
        // A mark trims only its path; the connection window shrinks when most of its
        // paths are marked, i.e. the bottleneck is common to them (e.g. the last hop).
        // In slow start the window grows by what is acknowledged (spec 6.1), not by the
        // round's additive step as well.
        // conn_cwnd_max bounds growth without a hint; it never cuts a window a share
        // (the receiver's word for the bottleneck) allowed, e.g. when the hint stops
        // because the sender is alone.
        const bool common = 2 * c.round_marked_paths > c.round_paths;
        end_round(c, common, cfg_.ecn_gain,
                  c.slow_start ? 0.0 : rtt_scaled(cfg_.conn_additive_increase, s.min_rtt_ns, cfg_.ai_reference_rtt_ns),
                  cfg_.conn_cwnd_min, std::max({cfg_.conn_cwnd_max, c.hint_cwnd, c.cwnd}), s.now_ns, s.srtt_ns);
        if (!common && !c.slow_start && c.hint_cwnd > c.cwnd) {
            // An unmarked round under a larger share (a sender left): take it at once.
            c.cwnd = c.hint_cwnd;
        }
        ++c.round_id;
        c.round_paths = 0;
        c.round_marked_paths = 0;
    }
}

void ecn_aimd::on_timeout(path_cc_state& p, conn_cc_state&, uint64_t) const
{
    // A timeout says the route may be broken, not that the fabric is congested:
    // restart the path small so a dead route holds little, leave the connection alone.
    p.cwnd = std::max(cfg_.path_cwnd_min, std::min(p.cwnd, cfg_.path_cwnd_init) / 2);
}

} // namespace metaroce
