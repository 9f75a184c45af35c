// A ring of message-sized registered regions on one endpoint; message i uses slot
// i % slots. Each slot is its own region, so a transfer that strays past its
// message hits a bounds check instead of a neighbour.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "metaroce/memory_region.hpp"

namespace metaroce::sim {

class region_ring {
public:
    region_ring() = default;
    // Throws std::runtime_error when the endpoint's region table is full.
    region_ring(mr_table& table, uint32_t slots, uint64_t slot_bytes);

    uint32_t slots() const noexcept { return uint32_t(mrs_.size()); }
    bool empty() const noexcept { return mrs_.empty(); }
    uint64_t slot_bytes() const noexcept { return slot_bytes_; }
    uint8_t* data(uint64_t msg) noexcept { return mem_.get() + (msg % slots()) * slot_bytes_; }
    const memory_region& mr(uint64_t msg) const noexcept { return mrs_[msg % slots()]; }

private:
    std::unique_ptr<uint8_t[]> mem_;
    uint64_t slot_bytes_ = 0;
    std::vector<memory_region> mrs_;
};

} // namespace metaroce::sim
