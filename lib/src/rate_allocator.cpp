#include "metaroce/rate_allocator.hpp"

#include <algorithm>

namespace metaroce {

namespace {

// A rate measured over fewer packets than this says little about a sender's limit.
constexpr double k_measure_pkts = 8;
// A member that sent nothing for this many of its own packet gaps (at its share) has left.
constexpr double k_idle_gaps = 4;
// ... and one that said DRAINED, for as many (and two of its round trips), but not the
// idle rule's 2 epochs: a finished sender's share is handed on in round trips, not epochs.
constexpr double k_drained_gaps = 4;
// The standing queue is handed back over this many epochs.
constexpr double k_drain_epochs = 2;
// An expected sender that has not sent for this many epochs is not coming.
constexpr uint64_t k_pending_epochs = 8;
// The queue is judged over one packet per member, but at most this many epochs (most
// members sending far under their share must not stall the drain).
constexpr double k_meas_max_epochs = 8;
// Above `utilization_` the shares fill the rest of the capacity in this many steps, one
// per measurement without a CE mark once the marks stopped for k_quiet_epochs.
constexpr double k_fill_steps = 8;
// Epochs without any mark before the shares grow past `utilization_`, so a fabric that
// marks every few epochs never fills. A measurement longer than this needs no mark of its
// own packets anyway; 8 (the longest measurement) left a short one's link at the 0.95
// share for twice as long (READ fan-in over 8 planes, 64:1: 11.6 RTTs to converge).
constexpr uint32_t k_quiet_epochs = 4;

} // namespace

rate_allocator::rate_allocator(uint64_t capacity_mbps, double utilization, uint64_t epoch_ns,
                               uint32_t max_conns)
    : capacity_mbps_(capacity_mbps), utilization_(utilization), epoch_ns_(epoch_ns),
      scale_(utilization), queue_scale_(utilization),
      bytes_(capacity_mbps != 0 ? max_conns : 0, 0), since_ns_(bytes_.size(), 0),
      last_ns_(bytes_.size(), 0), pkt_bytes_(bytes_.size(), 0), share_(bytes_.size(), 0),
      owd_min_(bytes_.size(), 0), owd_prev_(bytes_.size(), 0), told_(bytes_.size(), 0), rtt_ns_(bytes_.size(), 0),
      last_path_(bytes_.size(), 0), pos_(bytes_.size(), -1)
{
    members_.reserve(bytes_.size());
    pending_.reserve(bytes_.size());
    pend_pos_.assign(bytes_.size(), -1);
    pend_ns_.assign(bytes_.size(), 0);
    drained_ts_.assign(bytes_.size(), 0);
    leave_at_.assign(bytes_.size(), 0);
    scratch_.reserve(3 * bytes_.size());
}

uint32_t rate_allocator::share_mbps(uint32_t idx) const noexcept
{
    if (idx >= pos_.size() || pos_[idx] < 0) {
        return 0;
    }
    const double n = sharers();
    if (n == 1) {
        return 0; // alone: nothing to share, and no window to cap (spec 6.4)
    }
    if (share_[idx] == 0 || old_sum_ <= 0) {
        return uint32_t(std::max(1.0, pool() / n));
    }
    // What the newcomers since the last epoch took comes out of the old shares in
    // proportion; what leavers left goes back the same way.
    const double for_old = pool() * (1 - double(newcomers_ + pending_.size()) / n);
    return uint32_t(std::max(1.0, double(share_[idx]) * for_old / old_sum_));
}

bool rate_allocator::on_packet(uint32_t idx, uint32_t bytes, bool ce, uint64_t now, uint16_t path,
                               uint32_t tx_ts, bool retx) noexcept
{
    if (!enabled() || idx >= bytes_.size()) {
        return false;
    }
    if (now >= epoch_end_) {
        close_epoch(now);
    }
    if (now >= next_leave_) {
        leave_drained(now);
    }
    if (leave_at_[idx] != 0 && !retx && int32_t(tx_ts - drained_ts_[idx]) > 0) {
        leave_at_[idx] = 0; // new data after its DRAINED packet: it stays
    }
    const bool joined = pos_[idx] < 0;
    if (joined) {
        pos_[idx] = int32_t(members_.size());
        members_.push_back(idx); // capacity reserved: one entry per slot at most
        share_[idx] = 0;
        ++newcomers_;
        // An expected sender's share was set aside already: nobody else's changes.
        resplit_ = pend_pos_[idx] < 0;
        drop_pending(idx);
        bytes_[idx] = 0;
        since_ns_[idx] = now;
    }
    const uint32_t owd = uint32_t(now) - tx_ts;
    if (joined && owd_min_[idx] == 0 && owd_prev_[idx] == 0) {
        owd_min_[idx] = owd_prev_[idx] = owd; // first sample from this sender
    }
    if (int32_t(owd - owd_min_[idx]) < 0) {
        owd_min_[idx] = owd;
    }
    const uint32_t base = int32_t(owd_prev_[idx] - owd_min_[idx]) < 0 ? owd_prev_[idx] : owd_min_[idx];
    const int32_t queued = int32_t(owd - base);
    meas_queue_ns_ = std::min(meas_queue_ns_, uint32_t(std::max(0, queued)));
    bytes_[idx] += std::max<uint32_t>(bytes, 1);
    last_ns_[idx] = now;
    last_path_[idx] = path;
    pkt_bytes_[idx] = std::max<uint32_t>(bytes, 1);
    ++epoch_pkts_;
    ++meas_pkts_;
    meas_ce_ += ce ? 1 : 0;
    epoch_ce_ += ce ? 1 : 0;
    return joined;
}

// A sender is judged on a measurement long enough to hold several packets at its grant,
// and two of its round trips: a slow sender's gaps are not a limit, nor is a far sender
// still sending at the share it heard of a round trip ago.
bool rate_allocator::long_enough(uint32_t idx, double period_ns, double grant_mbps) const noexcept
{
    return period_ns >= std::max(double(epoch_ns_), 2 * double(rtt_ns_[idx])) &&
           grant_mbps * period_ns / 8000 >= k_measure_pkts * pkt_bytes_[idx];
}

void rate_allocator::drop_member(size_t pos) noexcept
{
    const uint32_t idx = members_[pos];
    leave_at_[idx] = 0;
    if (share_[idx] == 0) {
        --newcomers_;
    } else {
        old_sum_ -= share_[idx];
    }
    share_[idx] = 0;
    told_[idx] = 0;
    owd_min_[idx] = owd_prev_[idx] = 0;
    members_[pos] = members_.back();
    pos_[members_[pos]] = int32_t(pos);
    members_.pop_back();
    pos_[idx] = -1; // last: it may have been the one moved
}

void rate_allocator::expect(uint32_t idx, uint64_t now) noexcept
{
    if (!enabled() || idx >= pos_.size() || pos_[idx] >= 0) {
        return;
    }
    if (pend_pos_[idx] < 0) {
        pend_pos_[idx] = int32_t(pending_.size());
        pending_.push_back(idx); // capacity reserved: one entry per slot at most
        resplit_ = true;
    }
    pend_ns_[idx] = now;
}

void rate_allocator::drop_pending(uint32_t idx) noexcept
{
    const int32_t pos = pend_pos_[idx];
    if (pos < 0) {
        return;
    }
    pending_[size_t(pos)] = pending_.back();
    pend_pos_[pending_[size_t(pos)]] = pos;
    pending_.pop_back();
    pend_pos_[idx] = -1; // last: it may have been the one moved
}

void rate_allocator::drained(uint32_t idx, uint32_t tx_ts, uint64_t now) noexcept
{
    // A lone sharer has nobody to hand its share to: it stays (its next message would
    // otherwise come back as a newcomer, with an ACK at once it does not need).
    if (!enabled() || idx >= pos_.size() || pos_[idx] < 0 || sharers() < 2) {
        return;
    }
    // Two of its round trips (an epoch when unknown) and 4 of its packet gaps at its
    // share: a closed-loop sender's next message comes a round trip later, its first
    // packet paced a gap after the last and queued behind the others'.
    const uint64_t rtt = rtt_ns_[idx] != 0 ? rtt_ns_[idx] : epoch_ns_;
    const double gap_ns = double(pkt_bytes_[idx]) * 8000 / std::max(1u, share_mbps(idx));
    drained_ts_[idx] = tx_ts;
    leave_at_[idx] = now + uint64_t(std::max(2.0 * double(rtt), k_drained_gaps * gap_ns));
    next_leave_ = std::min(next_leave_, leave_at_[idx]);
}

// Members whose DRAINED wait ran out leave; their shares go back to the others at once.
void rate_allocator::leave_drained(uint64_t now) noexcept
{
    next_leave_ = UINT64_MAX;
    for (size_t i = members_.size(); i-- > 0;) {
        const uint32_t idx = members_[i];
        if (leave_at_[idx] == 0) {
            continue;
        }
        if (leave_at_[idx] <= now) {
            drop_member(i); // clears leave_at_
            resplit_ = true;
        } else {
            next_leave_ = std::min(next_leave_, leave_at_[idx]);
        }
    }
}

void rate_allocator::release(uint32_t idx) noexcept
{
    if (idx < rtt_ns_.size()) {
        rtt_ns_[idx] = 0;
    }
    if (idx < pend_pos_.size()) {
        drop_pending(idx);
    }
    if (idx < pos_.size() && pos_[idx] >= 0) {
        drop_member(size_t(pos_[idx]));
    }
}

// Max-min water filling: senders measured at clearly less than an equal share keep
// what they used plus headroom to grow; the rest split what remains equally.
void rate_allocator::close_epoch(uint64_t now) noexcept
{
    // The standing queue is judged over at least one epoch and one packet per member
    // (the members' packet gap): with many senders each under a packet per epoch, a
    // queue their packets build and drain once per gap is not standing, and a cut by an
    // epoch that saw only its busy part idles the link for everyone.
    const double span = double(now - meas_start_ns_);
    if (meas_pkts_ == 0 || meas_pkts_ >= members_.size() || span >= k_meas_max_epochs * double(epoch_ns_)) {
        // Drain the standing queue within k_drain_epochs: hand out that much less.
        const double queued = meas_pkts_ == 0 ? 0.0 : double(meas_queue_ns_);
        // Senders hear a smaller share with their next ACK, about one of their packet
        // gaps later: a queue handed back faster than that is cut again before the first
        // cut shows, and the shares swing between the floor and the full share.
        // The measurement's packets per member give that gap.
        const double gap_ns = meas_pkts_ == 0 ? 0.0 : span * double(members_.size()) / meas_pkts_;
        const double drain_ns = std::max(k_drain_epochs * double(epoch_ns_), 2 * gap_ns);
        queue_scale_ = std::max(utilization_ / 4, utilization_ - queued / drain_ns);
        // The headroom is lent while nothing marks: a measurement without a mark after
        // k_quiet_epochs clean epochs adds a step of it, one with a mark takes two back.
        if (meas_pkts_ != 0) {
            const double step = (1 - utilization_) / k_fill_steps;
            if (meas_ce_ != 0) {
                fill_ = std::max(0.0, fill_ - 2 * step);
            } else if (quiet_epochs_ >= k_quiet_epochs) {
                fill_ = std::min(1 - utilization_, fill_ + step);
            }
        }
        meas_pkts_ = 0;
        meas_ce_ = 0;
        meas_queue_ns_ = UINT32_MAX;
        meas_start_ns_ = now;
    }
    // A queue that was there before a sender's first packet hides from its delays, not
    // from ECN: while most of the epoch's packets are marked (the queue is above the
    // marking threshold), hand out up to a quarter less. Judged per epoch and not
    // compounded: the cut ends with the marks, or it outlives the queue and idles the link.
    const double marked = epoch_pkts_ == 0 ? 0.0 : double(epoch_ce_) / double(epoch_pkts_);
    scale_ = queue_scale_ + fill_;
    if (marked > 0.5) {
        scale_ = std::min(scale_, utilization_ * (1 - marked / 4));
    }
    quiet_epochs_ = epoch_ce_ != 0 ? 0 : std::min(quiet_epochs_ + 1, k_quiet_epochs);
    epoch_pkts_ = 0;
    epoch_ce_ = 0;
    close_shares(now);
}

// Water filling at an epoch's end, with the scale of the latest measurement.
void rate_allocator::close_shares(uint64_t now) noexcept
{
    if (++epochs_ % 64 == 0) {
        for (uint32_t idx : members_) {
            // Start a new window of smallest delays ("unset": far above the old one).
            owd_prev_[idx] = owd_min_[idx];
            owd_min_[idx] += 1u << 30;
        }
    }
    resplit_ = true;
    // A member silent for several of its packet gaps (and two epochs) has left.
    for (size_t i = members_.size(); i-- > 0;) {
        const uint32_t idx = members_[i];
        const double gap_ns = double(pkt_bytes_[idx]) * 8000 / std::max(1u, share_mbps(idx));
        const double idle = std::max({2 * double(epoch_ns_), k_idle_gaps * gap_ns, 2 * double(rtt_ns_[idx])});
        if (double(now - last_ns_[idx]) > idle) {
            drop_member(i);
        }
    }
    for (size_t i = pending_.size(); i-- > 0;) {
        // Expected for at least two of its round trips: a far sender's first data comes late.
        const uint32_t idx = pending_[i];
        if (now - pend_ns_[idx] > std::max(k_pending_epochs * epoch_ns_, 2 * rtt_ns_[idx])) {
            drop_pending(idx); // expected, never came
        }
    }
    // Expected senders keep an equal share set aside.
    double remaining = sharers() > 0 ? pool() * double(members_.size()) / sharers() : 0;
    scratch_.assign(members_.begin(), members_.end());
    size_t unfixed = scratch_.size();
    bool changed = true;
    while (changed && unfixed > 0) {
        changed = false;
        const double fair = remaining / double(unfixed);
        for (size_t i = 0; i < unfixed;) {
            const uint32_t idx = scratch_[i];
            const double period = double(now - since_ns_[idx]);
            const double granted = double(share_mbps(idx));
            const bool measured = share_[idx] != 0 && long_enough(idx, period, granted);
            const double used = period > 0 ? double(bytes_[idx]) * 8000 / period : 0;
            if (measured && used < 0.5 * fair && used < 0.75 * granted) {
                const double grant = std::min(fair, used * 1.5 + 0.01 * fair);
                scratch_[i] = scratch_[--unfixed];
                scratch_.push_back(uint32_t(std::max(1.0, grant))); // kept after the list
                scratch_.push_back(idx);
                remaining -= grant;
                changed = true;
            } else {
                ++i;
            }
        }
    }
    const double fair = unfixed > 0 ? remaining / double(unfixed) : 0;
    // Apply: limited slots were parked as (grant, idx) pairs after the member list.
    for (size_t i = members_.size(); i + 1 < scratch_.size(); i += 2) {
        share_[scratch_[i + 1]] = scratch_[i];
    }
    for (size_t i = 0; i < unfixed; ++i) {
        share_[scratch_[i]] = uint32_t(std::max(1.0, fair));
    }
    old_sum_ = 0;
    for (uint32_t idx : members_) {
        old_sum_ += share_[idx];
        if (long_enough(idx, double(now - since_ns_[idx]), double(share_[idx]))) {
            bytes_[idx] = 0; // measured: start the next measurement
            since_ns_[idx] = now;
        }
    }
    newcomers_ = 0;
    epoch_end_ = now + epoch_ns_;
}

} // namespace metaroce
