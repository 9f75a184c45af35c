// Random loss on the last hop into each host. iid drops each packet with
// probability rate. gilbert is a two-state Gilbert-Elliott chain per last-hop link:
// every packet in the Bad state is lost, none in Good. With mean burst length b
// and mean loss rate r: P(Bad->Good) = 1/b and P(Good->Bad) = r / (b * (1 - r)),
// whose stationary Bad probability is exactly r.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/rng.hpp"
#include "sim/scenario.hpp"

namespace metaroce::sim {

class loss_model {
public:
    loss_model(const loss_params& p, uint32_t links, uint64_t seed);

    // One decision per packet crossing last-hop link `slot`; true = drop it.
    bool drop(uint32_t slot) noexcept;

    double p_good_to_bad() const noexcept { return p_gb_; }
    double p_bad_to_good() const noexcept { return p_bg_; }

private:
    loss_kind kind_;
    double rate_;
    double p_gb_ = 0;
    double p_bg_ = 1;
    std::vector<uint8_t> bad_; // gilbert state per link
    xoshiro256 rng_;
};

} // namespace metaroce::sim
