#include "sim/rocev2/dcqcn.hpp"

#include <algorithm>

namespace metaroce::sim::rocev2 {

bool dcqcn::active() const noexcept
{
    // Before the first CNP nothing needs a timer; afterwards the timers run until
    // the rate is back at line rate and alpha has decayed.
    return cuts_ > 0 && (rc_ < p_->line_gbps || alpha_ > 0.01);
}

uint64_t dcqcn::next_deadline() const noexcept
{
    if (!active()) {
        return UINT64_MAX;
    }
    return std::min(next_alpha_, rc_ < p_->line_gbps ? next_increase_ : UINT64_MAX);
}

void dcqcn::on_cnp(uint64_t now_ns) noexcept
{
    rt_ = rc_;
    rc_ = std::max(p_->min_gbps, rc_ * (1 - alpha_ / 2));
    alpha_ = (1 - p_->g) * alpha_ + p_->g;
    t_count_ = 0;
    b_count_ = 0;
    bytes_ = 0;
    next_alpha_ = now_ns + p_->alpha_period_ns;
    next_increase_ = now_ns + p_->timer_period_ns;
    ++cuts_;
}

void dcqcn::on_sent(uint32_t bytes) noexcept
{
    if (cuts_ == 0 || rc_ >= p_->line_gbps) {
        return;
    }
    bytes_ += bytes;
    if (bytes_ >= p_->byte_counter) {
        bytes_ -= p_->byte_counter;
        ++b_count_;
        increase();
    }
}

void dcqcn::on_timer(uint64_t now_ns) noexcept
{
    while (active() && next_alpha_ <= now_ns) {
        alpha_ *= 1 - p_->g;
        next_alpha_ += p_->alpha_period_ns;
    }
    while (rc_ < p_->line_gbps && next_increase_ <= now_ns) {
        ++t_count_;
        increase();
        next_increase_ += p_->timer_period_ns;
    }
}

void dcqcn::increase() noexcept
{
    const uint32_t f = p_->fast_recovery_steps;
    const uint32_t hi = std::max(t_count_, b_count_);
    const uint32_t lo = std::min(t_count_, b_count_);
    if (hi < f) {
        // fast recovery: only the current rate moves
    } else if (lo > f) {
        rt_ += double(lo - f) * p_->hai_gbps;
    } else {
        rt_ += p_->ai_gbps;
    }
    rt_ = std::min(rt_, p_->line_gbps);
    rc_ = std::min((rt_ + rc_) / 2, p_->line_gbps);
    if (rc_ > p_->line_gbps * 0.999) {
        rc_ = p_->line_gbps; // close enough: stop the increase timer
    }
}

} // namespace metaroce::sim::rocev2
