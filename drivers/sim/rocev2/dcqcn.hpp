// DCQCN reaction point of one QP (the sender's rate control), structured as in
// Zhu et al., "Congestion Control for Large-Scale RDMA Deployments" (SIGCOMM 2015):
//  - a CNP cuts the current rate: target = current, current *= (1 - alpha/2), and
//    raises alpha = (1-g) alpha + g;
//  - alpha decays, alpha *= (1-g), every alpha period without a CNP;
//  - two counters, one advanced by a timer and one by every `byte_counter` bytes
//    sent, drive increases: while both are below F the current rate moves halfway to
//    the target (fast recovery); once one exceeds F the target grows by the additive
//    step (additive increase); once both exceed F, by i x the hyper step (hyper
//    increase); each increase also sets current = (target + current) / 2.
// The notification point (CNP at most once per 50 us per QP) lives in the receiver.
// Constants: g, the 55 us alpha and increase periods, F = 5 and the 40 Mb/s additive
// step are the paper's; the 32 KiB byte counter is the common NIC default (the
// paper's 10 MB leaves the byte counter idle at a few Gb/s, so a QP cut hard by a
// transient would crawl back at 40 Mb/s per 55 us); the hyper step is 10x the
// additive one (our choice). The rate never goes below 0.1 Gb/s.
#pragma once

#include <cstdint>

namespace metaroce::sim::rocev2 {

struct dcqcn_params {
    double line_gbps = 100;
    double min_gbps = 0.1;           // floor of the current rate
    double g = 1.0 / 256;            // alpha gain
    uint64_t alpha_period_ns = 55'000;
    uint64_t timer_period_ns = 55'000;  // rate increase timer
    uint64_t byte_counter = 32768;      // bytes per byte-counter event (NIC default)
    uint32_t fast_recovery_steps = 5;   // F
    double ai_gbps = 0.04;           // additive step, 40 Mb/s
    double hai_gbps = 0.4;           // hyper step, 400 Mb/s
};

class dcqcn {
public:
    explicit dcqcn(const dcqcn_params& p) : p_(&p), rc_(p.line_gbps), rt_(p.line_gbps) {}

    double rate_gbps() const noexcept { return rc_; }
    double alpha() const noexcept { return alpha_; }
    // Earliest time on_timer() has work; UINT64_MAX when idle at line rate.
    uint64_t next_deadline() const noexcept;

    void on_cnp(uint64_t now_ns) noexcept;
    void on_sent(uint32_t bytes) noexcept;
    void on_timer(uint64_t now_ns) noexcept;

    uint64_t cuts() const noexcept { return cuts_; }

private:
    void increase() noexcept;
    bool active() const noexcept;

    const dcqcn_params* p_;
    double rc_;            // current rate
    double rt_;            // target rate
    double alpha_ = 1;
    uint32_t t_count_ = 0;
    uint32_t b_count_ = 0;
    uint64_t bytes_ = 0;
    uint64_t next_alpha_ = UINT64_MAX;
    uint64_t next_increase_ = UINT64_MAX;
    uint64_t cuts_ = 0;
};

} // namespace metaroce::sim::rocev2
