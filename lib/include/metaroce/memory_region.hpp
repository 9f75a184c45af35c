// Registered memory: every remote access and every local buffer of a work request
// is checked against a region's bounds and access rights before a byte moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace metaroce {

struct memory_region {
    uint8_t* host = nullptr;  // where the engine reads and writes
    uint64_t va = 0;          // address peers and work requests use
    uint64_t length = 0;
    uint32_t access = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
};

enum class mr_check : uint8_t { ok, bad_key, access_denied, out_of_bounds };

class mr_table {
public:
    // wrap_hook (with wrap_arg) runs when epoch() wraps (below); fixed for the table's
    // life, so nothing holding a reference to the table can turn it off.
    explicit mr_table(uint32_t capacity, uint64_t seed = 1, void (*wrap_hook)(void*) = nullptr,
                      void* wrap_arg = nullptr);
    mr_table(const mr_table&) = delete;
    mr_table& operator=(const mr_table&) = delete;

    // Registers [host, host+length) seen by peers at `va`. Returns nullopt when full
    // or when length is 0.
    std::optional<memory_region> register_region(void* host, uint64_t va, uint64_t length,
                                                 uint32_t access);
    std::optional<memory_region> register_region(void* host, uint64_t length, uint32_t access)
    {
        return register_region(host, reinterpret_cast<uintptr_t>(host), length, access);
    }
    bool deregister(uint32_t lkey);
    // ibv_rereg_mr: the region under `lkey` takes a new translation ([host, host+length)
    // seen at `va`) and/or new rights, keeping both keys, so peers holding the rkey
    // reach the new memory and see the new rights. False (nothing changed) for an unknown
    // key, a zero length or a wrapping range.
    bool reregister(uint32_t lkey, void* host, uint64_t va, uint64_t length, uint32_t access);

    // Resolves [va, va+len) under a key with the needed rights to a host pointer.
    // A zero-length range is valid anywhere inside (or at the end of) the region.
    mr_check check_remote(uint32_t rkey, uint64_t va, uint64_t len, uint32_t need,
                          uint8_t** host) const noexcept;
    mr_check check_local(uint32_t lkey, uint64_t va, uint64_t len, uint32_t need,
                         uint8_t** host) const noexcept;

    const memory_region* find_by_lkey(uint32_t lkey) const noexcept;
    size_t size() const noexcept { return live_; }

    // Regions change only by deregistration or reregistration, and each moves the epoch.
    // So a range found valid under a key stays valid while epoch() is unchanged: the
    // engine checks a message's whole range once and then resolves each packet by
    // host_at(). 16 bits, never 0 (a holder's "not checked"); when it wraps, the wrap
    // hook runs so holders forget the epochs they kept.
    uint16_t epoch() const noexcept { return epoch_; }
    // The host address of va under key; only for a range checked in this epoch.
    uint8_t* host_at(uint32_t key, uint64_t va) const noexcept
    {
        const memory_region& mr = entries_[key & k_index_mask].mr;
        return mr.host + (va - mr.va);
    }

    // Keys carry the table index in their low bits (memory_region.cpp says the rest).
    static constexpr uint32_t k_index_bits = 16;
    static constexpr uint32_t k_index_mask = (1u << k_index_bits) - 1;

private:
    struct entry {
        memory_region mr;
        bool live = false;
        uint16_t generation = 0;
    };
    mr_check check(const entry* e, uint64_t va, uint64_t len, uint32_t need,
                   uint8_t** host) const noexcept;
    const entry* lookup(uint32_t key, bool remote) const noexcept;
    void bump_epoch() noexcept;

    std::vector<entry> entries_;
    std::vector<uint32_t> free_;
    uint32_t key_salt_;
    size_t live_ = 0;
    uint16_t epoch_ = 1;
    void (*wrap_hook_)(void*);
    void* wrap_arg_;
};

// The checks run for every data packet on both sides: inline.
__attribute__((always_inline)) inline const mr_table::entry* mr_table::lookup(uint32_t key, bool remote) const noexcept
{
    const uint32_t index = key & k_index_mask;
    if (index >= entries_.size()) {
        return nullptr;
    }
    const entry& e = entries_[index];
    if (!e.live || (remote ? e.mr.rkey : e.mr.lkey) != key) {
        return nullptr;
    }
    return &e;
}

__attribute__((always_inline)) inline mr_check mr_table::check(const entry* e, uint64_t va, uint64_t len, uint32_t need,
                                uint8_t** host) const noexcept
{
    if (e == nullptr) {
        return mr_check::bad_key;
    }
    if ((e->mr.access & need) != need) {
        return mr_check::access_denied;
    }
    // Overflow-safe: va >= base and len <= length - (va - base).
    if (va < e->mr.va || va - e->mr.va > e->mr.length || len > e->mr.length - (va - e->mr.va)) {
        return mr_check::out_of_bounds;
    }
    *host = e->mr.host + (va - e->mr.va);
    return mr_check::ok;
}

__attribute__((always_inline)) inline mr_check mr_table::check_remote(uint32_t rkey, uint64_t va, uint64_t len, uint32_t need,
                                       uint8_t** host) const noexcept
{
    return check(lookup(rkey, true), va, len, need, host);
}

__attribute__((always_inline)) inline mr_check mr_table::check_local(uint32_t lkey, uint64_t va, uint64_t len, uint32_t need,
                                      uint8_t** host) const noexcept
{
    return check(lookup(lkey, false), va, len, need, host);
}

} // namespace metaroce
