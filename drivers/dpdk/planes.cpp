#include "dpdk/planes.hpp"

namespace metaroce::dpdk {

void neighbor_table::set(uint32_t node, const mac_addr& mac, bool pinned)
{
    for (size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].node == node) {
            if (pinned || !entries_[i].pinned) {
                entries_[i].mac = mac;
                entries_[i].pinned = pinned;
            }
            last_ = i;
            return;
        }
    }
    entries_.push_back({node, mac, pinned});
    last_ = entries_.size() - 1;
}

} // namespace metaroce::dpdk
