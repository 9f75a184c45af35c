#include "sim/loss_model.hpp"

namespace metaroce::sim {

loss_model::loss_model(const loss_params& p, uint32_t links, uint64_t seed)
    : kind_(p.rate > 0 ? p.model : loss_kind::none), rate_(p.rate), rng_(derive_seed(seed, 0x1055))
{
    if (kind_ == loss_kind::gilbert) {
        p_bg_ = 1.0 / p.burst;
        p_gb_ = p.rate / (p.burst * (1.0 - p.rate));
        bad_.assign(links, 0);
    }
}

bool loss_model::drop(uint32_t slot) noexcept
{
    switch (kind_) {
    case loss_kind::none:
        return false;
    case loss_kind::iid:
        return rng_.uniform() < rate_;
    case loss_kind::gilbert: {
        uint8_t& bad = bad_[slot];
        bad = bad ? (rng_.uniform() >= p_bg_) : (rng_.uniform() < p_gb_);
        return bad != 0;
    }
    }
    return false;
}

} // namespace metaroce::sim
