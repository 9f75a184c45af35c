#include "sge_pool.hpp"

#include <algorithm>

namespace metaroce::detail {

sge_pool::sge_pool(uint32_t entries) : blocks_((entries + k_block_entries - 1) / k_block_entries)
{
    for (size_t i = 0; i < blocks_.size(); ++i) {
        blocks_[i].next = i + 1 < blocks_.size() ? int32_t(i + 1) : k_none;
    }
    free_ = blocks_.empty() ? k_none : 0;
    free_count_ = uint32_t(blocks_.size());
}

int32_t sge_pool::store(std::span<const sge> list) noexcept
{
    const auto need = uint32_t((list.size() + k_block_entries - 1) / k_block_entries);
    if (need == 0 || need > free_count_) {
        return k_none;
    }
    const int32_t head = free_;
    int32_t b = head;
    int32_t last = k_none;
    for (size_t i = 0; i < list.size(); i += k_block_entries) {
        block& blk = blocks_[b];
        blk.used = uint32_t(std::min<size_t>(k_block_entries, list.size() - i));
        std::copy_n(list.begin() + ptrdiff_t(i), blk.used, blk.e);
        last = b;
        b = blk.next;
    }
    free_ = b;
    blocks_[last].next = k_none;
    free_count_ -= need;
    return head;
}

void sge_pool::release(int32_t head) noexcept
{
    if (head == k_none) {
        return;
    }
    int32_t last = head;
    uint32_t n = 1;
    while (blocks_[last].next != k_none) {
        last = blocks_[last].next;
        ++n;
    }
    blocks_[last].next = free_;
    free_ = head;
    free_count_ += n;
}

} // namespace metaroce::detail
