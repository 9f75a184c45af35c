// Random loss on the last hop into each host. iid drops each packet with
// probability rate. gilbert is a two-state Gilbert-Elliott chain per last-hop link:
// every packet in the Bad state is lost, none in Good. With mean burst length b
// and mean loss rate r: P(Bad->Good) = 1/b and P(Good->Bad) = r / (b * (1 - r)),
// whose stationary Bad probability is exactly r. The chain steps once per `slot`
// (the link's time for one full-size packet), busy or idle: a burst is a stretch of
// time, so back-to-back packets see b in a row on average, and a packet arriving after
// a long silence sees the stationary chain, not the state the last packet left.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/rng.hpp"
#include "sim/scenario.hpp"
#include "sim/sim_time.hpp"

namespace metaroce::sim {

class loss_model {
public:
    // `slot`: the chain's step (gilbert only), at least 1 ps.
    loss_model(const loss_params& p, uint32_t links, uint64_t seed, sim_time slot = 1);

    // One decision per packet crossing last-hop link `link` at `now`; true = drop it.
    bool drop(uint32_t link, sim_time now) noexcept;

    double p_good_to_bad() const noexcept { return p_gb_; }
    double p_bad_to_good() const noexcept { return p_bg_; }

private:
    bool step_bad(bool bad, uint64_t steps) noexcept;

    loss_kind kind_;
    double rate_;
    double p_gb_ = 0;
    double p_bg_ = 1;
    sim_time slot_;
    std::vector<uint8_t> bad_;       // gilbert state per link
    std::vector<uint64_t> at_step_;  // ... as of this step
    xoshiro256 rng_;
};

} // namespace metaroce::sim
