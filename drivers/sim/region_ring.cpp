#include "sim/region_ring.hpp"

#include <stdexcept>

#include "metaroce/verbs_types.hpp"

namespace metaroce::sim {

region_ring::region_ring(mr_table& table, uint32_t slots, uint64_t slot_bytes)
    : mem_(std::make_unique<uint8_t[]>(slots * slot_bytes)), slot_bytes_(slot_bytes)
{
    const uint32_t rights = access::local_write | access::remote_write | access::remote_read;
    for (uint32_t i = 0; i < slots; ++i) {
        auto mr = table.register_region(mem_.get() + i * slot_bytes, slot_bytes, rights);
        if (!mr) {
            throw std::runtime_error("memory region table full: raise max_mrs or lower "
                                     "workload.outstanding");
        }
        mrs_.push_back(*mr);
    }
}

} // namespace metaroce::sim
