#include <algorithm>

#include "metaroce/congestion.hpp"

namespace metaroce {

namespace {

// One DCTCP-style round: fold the round's marked fraction into alpha, then either
// cut by alpha/2 (marks seen) or grow additively.
template <typename State>
void end_round(State& s, double gain, double grow, double lo, double hi, uint64_t now,
               uint64_t rtt)
{
    const double frac = s.round_pkts == 0 ? 0.0 : double(s.round_ce) / double(s.round_pkts);
    s.alpha = (1 - gain) * s.alpha + gain * frac;
    if (s.round_ce > 0) {
        s.cwnd = std::max(lo, s.cwnd * (1 - std::max(s.alpha, frac) / 2));
    } else {
        s.cwnd = std::min(hi, s.cwnd + grow);
    }
    s.round_pkts = 0;
    s.round_ce = 0;
    s.round_end_ns = now + rtt;
}

template <typename State>
void account(State& s, const ack_sample& a)
{
    s.round_pkts += a.rx_pkts;
    s.round_ce += a.ce_pkts;
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
    c.cwnd = cfg_.conn_cwnd_init;
}

void ecn_aimd::on_ack(path_cc_state& p, conn_cc_state& c, const ack_sample& s) const
{
    c.rate_hint_mbps = s.rate_hint_mbps;
    account(p, s);
    account(c, s);
    if (s.now_ns >= p.round_end_ns) {
        end_round(p, cfg_.ecn_gain, cfg_.additive_increase, cfg_.path_cwnd_min,
                  cfg_.path_cwnd_max, s.now_ns, s.srtt_ns);
    }
    if (s.now_ns >= c.round_end_ns) {
        // The connection grows by one packet per path-round's worth of growth.
        end_round(c, cfg_.ecn_gain, cfg_.additive_increase * 4, cfg_.conn_cwnd_min,
                  cfg_.conn_cwnd_max, s.now_ns, s.srtt_ns);
    }
}

void ecn_aimd::on_timeout(path_cc_state& p, conn_cc_state&, uint64_t) const
{
    // A timeout says the route may be broken, not that the fabric is congested:
    // restart the path small so a dead route holds little, leave the connection alone.
    p.cwnd = std::max(cfg_.path_cwnd_min, std::min(p.cwnd, cfg_.path_cwnd_init) / 2);
}

} // namespace metaroce
