// Time series of a run: payload bytes newly placed at receivers, binned by arrival
// time, per plane and per data source, and the last-hop queue sampled once per bin.
// Every derived figure of the result (timeline, Jain index, convergence, victim
// throughput, recovery after a failure) is computed from these bins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/sim_time.hpp"

namespace metaroce::sim {

class goodput_meter {
public:
    goodput_meter(sim_time bin, uint32_t hosts, uint32_t planes);

    // `bytes` of payload from data source `src` were placed, arriving on `plane`.
    void add(sim_time now, uint32_t src, uint32_t plane, uint64_t bytes);
    void sample_queue(sim_time now, uint64_t last_hop_bytes);

    sim_time bin() const noexcept { return bin_; }
    size_t bins() const noexcept { return total_.size(); }
    uint32_t planes() const noexcept { return planes_; }
    const std::vector<uint64_t>& total() const noexcept { return total_; }
    uint64_t plane_bytes(size_t bin, uint32_t plane) const noexcept
    {
        return plane_[bin * planes_ + plane];
    }
    // Per-source bins (empty for hosts that never sent data).
    const std::vector<uint64_t>& source(uint32_t host) const noexcept { return src_[host]; }
    const std::vector<uint64_t>& queue() const noexcept { return queue_; }
    uint64_t sum() const noexcept { return sum_; }

private:
    void grow(size_t bins);

    sim_time bin_;
    uint32_t planes_;
    std::vector<uint64_t> total_;
    std::vector<uint64_t> plane_;              // bin * planes + plane
    std::vector<std::vector<uint64_t>> src_;   // per host, grown on first use
    std::vector<uint64_t> queue_;              // last-hop backlog sampled at each bin
    uint64_t sum_ = 0;
};

} // namespace metaroce::sim
