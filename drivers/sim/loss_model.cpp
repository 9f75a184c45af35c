#include "sim/loss_model.hpp"

#include <algorithm>
#include <cmath>

namespace metaroce::sim {

loss_model::loss_model(const loss_params& p, uint32_t links, uint64_t seed, sim_time slot)
    : kind_(p.rate > 0 ? p.model : loss_kind::none), rate_(p.rate), slot_(std::max<sim_time>(slot, 1)),
      rng_(derive_seed(seed, 0x1055))
{
    if (kind_ == loss_kind::gilbert) {
        p_bg_ = 1.0 / p.burst;
        p_gb_ = p.rate / (p.burst * (1.0 - p.rate));
        bad_.assign(links, 0);
        at_step_.assign(links, 0);
    }
}

// The chain `steps` steps on from `bad`. One step is one draw; more are one draw from
// the k-step distribution: P(Bad) = r + (s - r) * (1 - p_gb - p_bg)^k, s = 1 if Bad now
// (r, the mean rate, is the chain's stationary Bad probability).
bool loss_model::step_bad(bool bad, uint64_t steps) noexcept
{
    if (steps == 1) {
        return bad ? rng_.uniform() >= p_bg_ : rng_.uniform() < p_gb_;
    }
    const double memory = std::pow(1.0 - p_gb_ - p_bg_, double(steps));
    return rng_.uniform() < rate_ + ((bad ? 1.0 : 0.0) - rate_) * memory;
}

bool loss_model::drop(uint32_t link, sim_time now) noexcept
{
    switch (kind_) {
    case loss_kind::none:
        return false;
    case loss_kind::iid:
        return rng_.uniform() < rate_;
    case loss_kind::gilbert: {
        // Packets within one slot see the same state: a burst is a stretch of time.
        const uint64_t step = uint64_t(now / slot_) + 1; // step 0: the Good start
        if (step > at_step_[link]) {
            bad_[link] = step_bad(bad_[link] != 0, step - at_step_[link]);
            at_step_[link] = step;
        }
        return bad_[link] != 0;
    }
    }
    return false;
}

} // namespace metaroce::sim
