// Chunks of N objects of one kind shared by every connection of an endpoint, sized at
// endpoint creation: message slots (send and receive) and RACK's send log are held only
// while messages or packets are in flight, so an idle connection holds none. Memory is
// left untouched until a chunk is first taken; taking and returning never allocate.
//
// Chunk `capacity()` is a sentinel, never taken: it holds default objects, so a directory
// entry that names no chunk points at it and a look-up of a slot not in use reads an
// idle object instead of following a null index. Nothing may write to it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace metaroce::detail {

template <typename T, uint32_t N>
class chunk_pool {
    static_assert(std::is_trivially_destructible_v<T>, "chunks are reused without destructors");
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "storage is a plain byte array");

public:
    static constexpr uint32_t k_per_chunk = N;

    // chunks <= 65535: chunk numbers, the sentinel's included, fit 16 bits.
    // reused_idle: its users give a chunk back only with every object in an idle state a
    // look-up may read (a slot not in use, log entries outside head..tail), so a chunk is
    // built on its first take only; a ping-pong message takes and gives chunks each time.
    explicit chunk_pool(uint32_t chunks, bool reused_idle = false)
        : bytes_(std::make_unique_for_overwrite<unsigned char[]>((size_t(chunks) + 1) * N * sizeof(T))),
          free_(std::make_unique<uint16_t[]>(chunks)), aux_(std::make_unique<uint16_t[]>(size_t(chunks) + 1)),
          built_(std::make_unique<bool[]>(size_t(chunks) + 1)), free_count_(chunks), capacity_(chunks),
          reused_idle_(reused_idle)
    {
        for (uint32_t i = 0; i < chunks; ++i) {
            free_[i] = uint16_t(chunks - 1 - i); // chunk 0 on top: taken first
        }
        construct(uint16_t(chunks));
    }

    T* base() noexcept { return std::launder(reinterpret_cast<T*>(bytes_.get())); }
    const T* base() const noexcept { return std::launder(reinterpret_cast<const T*>(bytes_.get())); }
    uint16_t sentinel() const noexcept { return uint16_t(capacity_); }
    bool empty() const noexcept { return free_count_ == 0; }
    uint32_t free_chunks() const noexcept { return free_count_; }
    // A chunk of N default objects with aux 0, or sentinel() when every chunk is taken.
    uint16_t take() noexcept
    {
        if (free_count_ == 0) {
            return sentinel();
        }
        const uint16_t c = free_[--free_count_];
        peak_ = std::max(peak_, capacity_ - free_count_);
        if (!reused_idle_ || !built_[c]) {
            construct(c);
            built_[c] = true;
        }
        aux_[c] = 0;
        return c;
    }
    void give(uint16_t chunk) noexcept { free_[free_count_++] = chunk; }
    // One 16-bit word per chunk for its user: a use count, or the next chunk of a chain.
    uint16_t& aux(uint16_t chunk) noexcept { return aux_[chunk]; }
    uint32_t capacity() const noexcept { return capacity_; }
    uint32_t in_use() const noexcept { return capacity_ - free_count_; }
    uint32_t peak() const noexcept { return peak_; } // most chunks ever in use at once
    static constexpr size_t chunk_bytes() noexcept { return N * sizeof(T); }

private:
    void construct(uint16_t c) noexcept
    {
        T* p = reinterpret_cast<T*>(bytes_.get()) + size_t(c) * N;
        for (uint32_t i = 0; i < N; ++i) {
            ::new (static_cast<void*>(p + i)) T{};
        }
    }

    std::unique_ptr<unsigned char[]> bytes_;
    std::unique_ptr<uint16_t[]> free_; // a stack: the chunk used last is reused first (warm)
    std::unique_ptr<uint16_t[]> aux_;
    std::unique_ptr<bool[]> built_;
    uint32_t free_count_ = 0;
    uint32_t capacity_ = 0;
    uint32_t peak_ = 0;
    bool reused_idle_ = false;
};

// A connection's window of message slots (index = msn % size()), 16 to a pool chunk:
// dir[i / 16] names the chunk, or the pool's sentinel while none of its 16 is in use.
inline constexpr uint32_t k_slot_shift = 4;
inline constexpr uint32_t k_slots_per_chunk = 1u << k_slot_shift;

template <typename T>
struct slot_table {
    T* base = nullptr;                // the pool's storage
    std::vector<uint16_t> dir;        // sized once, on the control path
    uint32_t n = 0;

    void reset(T* pool_base, uint16_t sentinel, uint32_t slots)
    {
        base = pool_base;
        n = slots;
        dir.assign((slots + k_slots_per_chunk - 1) >> k_slot_shift, sentinel);
    }
    size_t size() const noexcept { return n; }
    T& operator[](uint32_t i) noexcept
    {
        return base[size_t(dir[i >> k_slot_shift]) * k_slots_per_chunk + (i & (k_slots_per_chunk - 1))];
    }
    const T& operator[](uint32_t i) const noexcept
    {
        return base[size_t(dir[i >> k_slot_shift]) * k_slots_per_chunk + (i & (k_slots_per_chunk - 1))];
    }
};

} // namespace metaroce::detail
