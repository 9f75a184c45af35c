#include "sim/packet_pool.hpp"

namespace metaroce::sim {

packet_pool::packet_pool(size_t buf_bytes, uint32_t chunk_packets)
    : buf_bytes_(buf_bytes), chunk_packets_(chunk_packets)
{
    grow();
}

uint32_t packet_pool::alloc()
{
    if (free_.empty()) {
        grow();
    }
    const uint32_t idx = free_.back();
    free_.pop_back();
    return idx;
}

void packet_pool::grow()
{
    const auto first = uint32_t(meta_.size());
    chunks_.push_back(std::make_unique_for_overwrite<uint8_t[]>(buf_bytes_ * chunk_packets_));
    meta_.resize(meta_.size() + chunk_packets_);
    free_.reserve(meta_.size());
    // Hand out low indexes first so the working set stays small.
    for (uint32_t i = chunk_packets_; i > 0; --i) {
        free_.push_back(first + i - 1);
    }
}

} // namespace metaroce::sim
