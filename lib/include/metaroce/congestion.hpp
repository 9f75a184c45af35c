// Congestion control behind a small interface: the engine reports ACK samples and
// timeouts per path, and asks how many packets a path and the connection may have
// in flight. ecn_aimd is the one controller; it also turns the receiver's rate hint
// into a window (effective_cwnd). Pacing at the hint is the requester's (spec 6.5),
// path steering path_health's.
#pragma once

#include <cstdint>

#include "metaroce/config.hpp"

namespace metaroce {

struct path_cc_state {
    double cwnd = 0;          // packets
    double alpha = 0;         // EWMA of the ECN-marked fraction
    uint32_t round_pkts = 0;  // packets acknowledged in the current round
    uint32_t round_ce = 0;
    uint64_t round_end_ns = 0;
    uint32_t conn_round_seen = UINT32_MAX;   // last connection round this path reported in
    uint32_t conn_round_marked = UINT32_MAX; // last connection round this path saw a mark
};

struct conn_cc_state {
    double cwnd = 0;
    double alpha = 0;
    uint32_t round_pkts = 0;
    uint32_t round_ce = 0;
    uint64_t round_end_ns = 0;
    uint32_t rate_hint_mbps = 0; // last hint from the receiver (0 = none)
    double hint_cwnd = 0;        // the hint as a window in packets (0 = none)
    bool slow_start = true;      // doubling per RTT until the first mark
    bool acked = false;          // the first ACK arrived (spec 6.1: admission)
    uint32_t round_id = 0;
    uint32_t round_paths = 0;        // paths that reported in this round
    uint32_t round_marked_paths = 0; // ... and saw at least one mark
};

struct ack_sample {
    uint64_t now_ns = 0;
    uint32_t newly_acked = 0;   // packets this ACK acknowledged for the first time
    uint16_t rx_pkts = 0;       // receiver's count since its previous ACK
    uint16_t ce_pkts = 0;
    uint64_t srtt_ns = 0;       // path's smoothed RTT after this sample
    uint64_t rtt_ns = 0;        // this ACK's RTT sample (0 = none)
    uint64_t path_min_rtt_ns = 0;
    uint32_t rate_hint_mbps = 0;
    uint64_t min_rtt_ns = 0;    // connection's smallest RTT sample (0 = none yet)
    uint32_t packet_bytes = 0;  // payload per packet (mtu)
};

// The window a connection may use: its AIMD window, capped by the receiver's hint.
inline double effective_cwnd(const conn_cc_state& c) noexcept
{
    return c.hint_cwnd > 0 && c.hint_cwnd < c.cwnd ? c.hint_cwnd : c.cwnd;
}

// A window w as the integer the per-packet checks use, kept beside the double
// (window_room after each change) so sending compares integers: for n packets in
// flight, double(n) >= max(1, w) iff n >= room, and double(n) + 1 >= w iff n + 1 >= room
// (room is ceil(max(1, w)); for w <= 1 both sides of the second are true).
inline uint32_t window_room(double w) noexcept
{
    if (w >= 4294967295.0) {
        return UINT32_MAX;
    }
    if (w <= 1) {
        return 1;
    }
    const auto room = uint32_t(w);
    return room + (double(room) < w ? 1 : 0); // ceil without libm
}

class congestion_control {
public:
    virtual ~congestion_control() = default;
    virtual void init(path_cc_state& p) const = 0;
    virtual void init(conn_cc_state& c) const = 0;
    virtual void on_ack(path_cc_state& p, conn_cc_state& c, const ack_sample& s) const = 0;
    virtual void on_timeout(path_cc_state& p, conn_cc_state& c, uint64_t now_ns) const = 0;
    // A receiver's hint (spec 6.4), also from an ACK that acknowledged nothing new.
    virtual void on_hint(conn_cc_state& c, uint32_t hint_mbps, uint64_t min_rtt_ns,
                         uint32_t packet_bytes) const = 0;
};

// ECN-driven AIMD per path and per connection (spec 6): once per RTT each window
// grows additively if no mark was seen, else shrinks by alpha/2 as in DCTCP.
// A mark on one path trims only that path; the connection window shrinks only when
// most paths were marked in the round. Loss is not a congestion signal here.
class ecn_aimd final : public congestion_control {
public:
    explicit ecn_aimd(const cc_config& cfg) : cfg_(cfg) {}
    void init(path_cc_state& p) const override;
    void init(conn_cc_state& c) const override;
    void on_ack(path_cc_state& p, conn_cc_state& c, const ack_sample& s) const override;
    void on_timeout(path_cc_state& p, conn_cc_state& c, uint64_t now_ns) const override;
    void on_hint(conn_cc_state& c, uint32_t hint_mbps, uint64_t min_rtt_ns,
                 uint32_t packet_bytes) const override;

private:
    cc_config cfg_;
};

} // namespace metaroce
