#include "metaroce/memory_region.hpp"

namespace metaroce {

// Keys carry the table index (low 16 bits), a 15-bit generation that changes on
// every reuse of the index, which key of the pair it is (1 bit), and a salt, so a
// stale or guessed key rarely resolves. (An 8-bit generation let a stale rkey
// reach a new region after 256 reuses of its index.)
namespace {
constexpr uint32_t k_index_bits = mr_table::k_index_bits;

uint32_t make_key(uint32_t index, uint16_t generation, uint32_t salt, bool remote) noexcept
{
    const uint32_t tag = ((uint32_t(generation & 0x7fff) << 1) | (remote ? 1 : 0)) ^ (salt & 0xffff);
    return (tag << k_index_bits) | index;
}
} // namespace

mr_table::mr_table(uint32_t capacity, uint64_t seed, void (*wrap_hook)(void*), void* wrap_arg)
    : entries_(capacity > k_index_mask ? k_index_mask : capacity),
      key_salt_(uint32_t(seed * 0x9e3779b97f4a7c15ull >> 40)), wrap_hook_(wrap_hook), wrap_arg_(wrap_arg)
{
    free_.reserve(entries_.size());
    for (uint32_t i = uint32_t(entries_.size()); i > 0; --i) {
        free_.push_back(i - 1);
    }
}

std::optional<memory_region> mr_table::register_region(void* host, uint64_t va, uint64_t length,
                                                       uint32_t access)
{
    if (free_.empty() || length == 0 || host == nullptr || va + length < va) {
        return std::nullopt;
    }
    const uint32_t index = free_.back();
    free_.pop_back();
    entry& e = entries_[index];
    e.generation++;
    e.live = true;
    e.mr.host = static_cast<uint8_t*>(host);
    e.mr.va = va;
    e.mr.length = length;
    e.mr.access = access;
    e.mr.lkey = make_key(index, e.generation, key_salt_, false);
    e.mr.rkey = make_key(index, e.generation, key_salt_, true);
    ++live_;
    return e.mr;
}

bool mr_table::deregister(uint32_t lkey)
{
    const entry* found = lookup(lkey, false);
    if (found == nullptr) {
        return false;
    }
    const uint32_t index = lkey & k_index_mask;
    entries_[index].live = false;
    free_.push_back(index);
    --live_;
    bump_epoch();
    return true;
}

bool mr_table::reregister(uint32_t lkey, void* host, uint64_t va, uint64_t length, uint32_t access)
{
    if (lookup(lkey, false) == nullptr || length == 0 || host == nullptr || va + length < va) {
        return false;
    }
    memory_region& mr = entries_[lkey & k_index_mask].mr;
    mr.host = static_cast<uint8_t*>(host);
    mr.va = va;
    mr.length = length;
    mr.access = access;
    bump_epoch(); // every range checked under the old translation or rights is checked again
    return true;
}

void mr_table::bump_epoch() noexcept
{
    if (++epoch_ == 0) {
        epoch_ = 1;
        if (wrap_hook_ != nullptr) {
            wrap_hook_(wrap_arg_); // an epoch kept 65,535 changes ago would match again
        }
    }
}

const memory_region* mr_table::find_by_lkey(uint32_t lkey) const noexcept
{
    const entry* e = lookup(lkey, false);
    return e != nullptr ? &e->mr : nullptr;
}

} // namespace metaroce
