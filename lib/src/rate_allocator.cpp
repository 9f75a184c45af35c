#include "metaroce/rate_allocator.hpp"

#include <algorithm>

namespace metaroce {

rate_allocator::rate_allocator(uint64_t capacity_mbps, double utilization, uint64_t epoch_ns,
                               uint32_t max_conns)
    : capacity_mbps_(capacity_mbps), utilization_(utilization), epoch_ns_(epoch_ns),
      scale_(utilization),
      bytes_(capacity_mbps != 0 ? max_conns : 0, 0), share_(bytes_.size(), 0),
      age_(bytes_.size(), 0)
{
    active_.reserve(bytes_.size());
    scratch_.reserve(bytes_.size());
}

void rate_allocator::on_packet(uint32_t idx, uint32_t bytes, bool ce, uint64_t now) noexcept
{
    if (!enabled() || idx >= bytes_.size()) {
        return;
    }
    if (now >= epoch_end_) {
        close_epoch(now);
    }
    if (bytes_[idx] == 0) {
        active_.push_back(idx); // capacity reserved: one entry per slot at most
        if (share_[idx] == 0) {
            // A newcomer gets an equal share right away, before its first full epoch.
            share_[idx] = uint32_t(double(capacity_mbps_) * scale_ /
                                   double(std::max<size_t>(active_.size(), last_active_ + 1)));
        }
    }
    bytes_[idx] += std::max<uint32_t>(bytes, 1);
    ++epoch_pkts_;
    epoch_ce_ += ce ? 1 : 0;
}

void rate_allocator::release(uint32_t idx) noexcept
{
    if (idx < bytes_.size()) {
        share_[idx] = 0;
        age_[idx] = 0;
    }
}

// Max-min water filling: senders that used clearly less than an equal share keep
// what they used plus headroom to grow; the rest split what remains equally.
void rate_allocator::close_epoch(uint64_t now) noexcept
{
    const double secs = double(epoch_ns_) * 1e-9;
    const double marked = epoch_pkts_ == 0 ? 0.0 : double(epoch_ce_) / double(epoch_pkts_);
    if (marked > 0.1) {
        scale_ = std::max(utilization_ / 4, scale_ * (1 - marked / 2));
    } else {
        scale_ = std::min(utilization_, scale_ + utilization_ / 32);
    }
    epoch_pkts_ = 0;
    epoch_ce_ = 0;
    double remaining = double(capacity_mbps_) * scale_;
    scratch_.assign(active_.begin(), active_.end());
    size_t unfixed = scratch_.size();
    bool changed = true;
    while (changed && unfixed > 0) {
        changed = false;
        const double fair = remaining / double(unfixed);
        for (size_t i = 0; i < unfixed;) {
            const uint32_t idx = scratch_[i];
            const double used = double(bytes_[idx]) * 8 / secs / 1e6;
            // Limited elsewhere: a sender seen for a whole epoch that used neither half
            // an equal share nor most of what it was granted.
            if (age_[idx] > 0 && used < 0.5 * fair && used < 0.75 * double(share_[idx])) {
                const double grant = std::min(fair, used * 1.5 + 0.01 * fair);
                share_[idx] = uint32_t(std::max(1.0, grant));
                remaining -= grant;
                scratch_[i] = scratch_[--unfixed];
                changed = true;
            } else {
                ++i;
            }
        }
    }
    const double fair = unfixed > 0 ? remaining / double(unfixed) : 0;
    for (size_t i = 0; i < unfixed; ++i) {
        share_[scratch_[i]] = uint32_t(std::max(1.0, fair));
    }
    last_active_ = uint32_t(active_.size());
    std::fill(age_.begin(), age_.end(), uint8_t(0)); // idle slots start over
    for (uint32_t idx : active_) {
        bytes_[idx] = 0;
        age_[idx] = 1;
    }
    active_.clear();
    epoch_end_ = now + epoch_ns_;
}

} // namespace metaroce
