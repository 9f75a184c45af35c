#include "sim/metrics.hpp"

namespace metaroce::sim {

goodput_meter::goodput_meter(sim_time bin, uint32_t hosts, uint32_t planes)
    : bin_(bin), planes_(planes), src_(hosts)
{
}

void goodput_meter::grow(size_t bins)
{
    if (bins > total_.size()) {
        total_.resize(bins, 0);
        plane_.resize(bins * planes_, 0);
    }
}

void goodput_meter::add(sim_time now, uint32_t src, uint32_t plane, uint64_t bytes)
{
    const size_t b = size_t(now / bin_);
    grow(b + 1);
    total_[b] += bytes;
    plane_[b * planes_ + plane] += bytes;
    auto& s = src_[src];
    if (s.size() <= b) {
        s.resize(b + 1, 0);
    }
    s[b] += bytes;
    sum_ += bytes;
}

void goodput_meter::sample_queue(sim_time now, uint64_t last_hop_bytes)
{
    const size_t b = size_t(now / bin_);
    if (queue_.size() <= b) {
        queue_.resize(b + 1, 0);
    }
    queue_[b] = last_hop_bytes;
}

} // namespace metaroce::sim
