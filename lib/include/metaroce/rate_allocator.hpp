// Receiver side of the rate hints (spec 6.4): splits this node's inbound capacity
// among the connections sending to it, max-min fair, and says each sender's share in
// every ACK. A sender joining or leaving re-splits the shares at once, so the share in
// the ACK of a newcomer's first packet is already its final one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace metaroce {

class rate_allocator {
public:
    // capacity_mbps == 0 disables hints (every share reads 0 = "no hint").
    rate_allocator(uint64_t capacity_mbps, double utilization, uint64_t epoch_ns,
                   uint32_t max_conns);

    bool enabled() const noexcept { return capacity_mbps_ != 0; }
    // A data packet of `bytes` arrived for connection slot `idx` at `now`. Returns true
    // when it came from a sender that was not a member: the shares were re-split, and the
    // caller should tell the newcomer at once.
    // `path` is where it arrived: a pushed hint goes back there. `tx_ts` is the sender's
    // 32-bit clock at transmission: its one-way delay above the smallest seen from that
    // sender is the time the packet queued (the clocks' offset cancels out).
    // `retx`: a resend or copy (it does not cancel a DRAINED sender's departure).
    bool on_packet(uint32_t idx, uint32_t bytes, bool ce, uint64_t now, uint16_t path = 0,
                   uint32_t tx_ts = 0, bool retx = false) noexcept;
    // Slot `idx`'s packet sent at `tx_ts` said it has nothing more queued (DRAINED, spec
    // 6.4): unless new data (sent after it) comes within two of its round trips, it has
    // left then, not after the idle time (several epochs or packet gaps). A closed-loop
    // sender, posting again when its completion comes back, stays a member meanwhile.
    void drained(uint32_t idx, uint32_t tx_ts, uint64_t now) noexcept;
    // Shares changed since the last call (an epoch closed): senders may need a push.
    bool take_resplit() noexcept
    {
        const bool r = resplit_;
        resplit_ = false;
        return r;
    }
    // The hint an ACK just told slot `idx`.
    void told(uint32_t idx, uint32_t mbps) noexcept
    {
        if (idx < told_.size()) {
            told_[idx] = mbps;
        }
    }
    // Calls f(slot, path) for every member whose share fell well below what it was last
    // told (newcomers joined): it should get an ACK with the new share now, not one RTT
    // later, or it keeps sending at the old share meanwhile.
    template <typename F>
    void for_each_stale(F&& f) const
    {
        for (uint32_t idx : members_) {
            const uint64_t now_mbps = share_mbps(idx);
            if (told_[idx] != 0 &&
                (4 * now_mbps < 3 * uint64_t(told_[idx]) || 3 * now_mbps > 4 * uint64_t(told_[idx]))) {
                f(idx, last_path_[idx]);
            }
        }
    }
    // The share of slot `idx`, in Mb/s (0 when disabled or not a member). The water-filled
    // share of the last epoch, scaled to the senders present now: a newcomer takes an
    // equal share of the whole, the others give up theirs in proportion.
    uint32_t share_mbps(uint32_t idx) const noexcept;
    // What goes in the ACK: the share while the inbound side is shared (two or more
    // senders, counting those expected), 0 ("no hint") for a lone sender.
    uint32_t hint_mbps(uint32_t idx) const noexcept { return share_mbps(idx); }
    // Slot `idx` is about to send here (it connected to us, or we asked it for READ
    // data): its share is set aside now, so the senders that start before it are not
    // told more than they will keep (spec 6.4). Expires unused after a few epochs.
    void expect(uint32_t idx, uint64_t now) noexcept;
    // The share set aside for expected slot `idx` (0 when alone, disabled or not
    // expected): what its ACCEPT tells it before its first packet (spec 6.4).
    uint32_t expected_share_mbps(uint32_t idx) const noexcept
    {
        if (idx >= pend_pos_.size() || pend_pos_[idx] < 0 || sharers() <= 1) {
            return 0;
        }
        return uint32_t(std::max(1.0, pool() / sharers()));
    }
    // What a READ_REQ tells its responder before the responses' first ACK (spec 3.3):
    // the share of a member, or the one set aside while it is expected.
    uint32_t read_hint_mbps(uint32_t idx) const noexcept
    {
        return std::max(share_mbps(idx), expected_share_mbps(idx));
    }
    // The round trip to slot `idx`'s sender, as far as this node knows it (the
    // handshake's). A window-limited sender is silent for up to a round trip between
    // bursts: it is not judged gone sooner than two of them.
    void set_rtt(uint32_t idx, uint64_t rtt_ns) noexcept
    {
        if (idx < rtt_ns_.size()) {
            rtt_ns_[idx] = rtt_ns;
        }
    }
    // Forget a slot (connection freed): the others' shares grow at once.
    void release(uint32_t idx) noexcept;
    // The inbound capacity handed out, Mb/s (what the shares split).
    double pool_mbps() const noexcept { return pool(); }
    // Senders currently sharing the inbound capacity.
    uint32_t active() const noexcept { return uint32_t(members_.size()); }
    // ... and those expected to join.
    uint32_t expected() const noexcept { return uint32_t(pending_.size()); }

private:
    void close_epoch(uint64_t now) noexcept;
    void close_shares(uint64_t now) noexcept;
    void drop_member(size_t pos) noexcept;
    bool long_enough(uint32_t idx, double period_ns, double grant_mbps) const noexcept;
    void drop_pending(uint32_t idx) noexcept;
    double sharers() const noexcept { return double(members_.size() + pending_.size()); }
    double pool() const noexcept { return double(capacity_mbps_) * scale_; }

    uint64_t capacity_mbps_;
    double utilization_;
    uint64_t epoch_ns_;
    uint64_t epoch_end_ = 0;
    // Share of capacity handed out: `utilization_`, less what drains the standing queue
    // in front of this node within a few epochs, plus `fill_`. The standing queue is the
    // smallest queueing delay any packet of the epoch saw.
    double scale_;
    // The headroom (1 - `utilization_`) lent out while no packet is CE-marked: a link
    // left idle by a share nobody needs back is goodput lost (spec 6.4).
    double fill_ = 0;
    uint32_t quiet_epochs_ = 0;      // epochs in a row without a CE-marked packet
    uint32_t epoch_pkts_ = 0;
    uint32_t epoch_ce_ = 0;
    // The standing queue's measurement: packets, smallest queueing delay, start.
    uint32_t meas_pkts_ = 0;
    uint32_t meas_ce_ = 0;           // ... and how many of them were CE-marked
    uint32_t meas_queue_ns_ = UINT32_MAX;
    uint64_t meas_start_ns_ = 0;
    double queue_scale_;             // `utilization_` less the drain of the latest measurement
    uint32_t epochs_ = 0;
    bool resplit_ = false;
    uint32_t newcomers_ = 0;         // members that joined since the last water filling
    double old_sum_ = 0;             // shares of the other members, Mb/s
    std::vector<uint64_t> bytes_;    // per slot, since since_ns_
    std::vector<uint64_t> since_ns_; // per slot, start of its current measurement
    std::vector<uint64_t> last_ns_;  // per slot, its latest packet
    std::vector<uint32_t> pkt_bytes_; // per slot, its latest packet's size
    std::vector<uint32_t> share_;    // per slot, water-filled share (0 = joined since)
    // Per slot, smallest one-way delay (sender clock to ours, wrapping) in this and the
    // previous window of 64 epochs: a clock drifting against ours moves it only slowly.
    std::vector<uint32_t> owd_min_;
    std::vector<uint32_t> owd_prev_;
    std::vector<uint32_t> told_;     // per slot, hint in its latest ACK
    std::vector<uint64_t> rtt_ns_;   // per slot, its round trip (0 = unknown)
    std::vector<uint16_t> last_path_; // per slot, path of its latest packet
    std::vector<int32_t> pos_;       // per slot, index in members_ (-1 = not a member)
    std::vector<uint32_t> members_;  // slots sharing the capacity, reserved once
    std::vector<uint32_t> pending_;  // slots expected to join, reserved once
    std::vector<int32_t> pend_pos_;  // per slot, index in pending_ (-1 = not pending)
    std::vector<uint64_t> pend_ns_;  // per slot, when it was expected
    std::vector<uint32_t> drained_ts_; // per slot, send time of its DRAINED packet
    std::vector<uint64_t> leave_at_;   // per slot, when a DRAINED member leaves (0 = not draining)
    uint64_t next_leave_ = UINT64_MAX; // earliest leave_at_ of any member
    void leave_drained(uint64_t now) noexcept;
    std::vector<uint32_t> scratch_;  // water-filling work list (3 per slot), reserved once
};

} // namespace metaroce
