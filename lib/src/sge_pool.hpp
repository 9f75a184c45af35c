// Gather/scatter lists of more than one entry (spec 4.1), kept in fixed blocks drawn
// from one pool per endpoint: posting allocates nothing, and a connection pays for
// lists only while work requests that use them are outstanding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "metaroce/verbs_types.hpp"

namespace metaroce::detail {

class sge_pool {
public:
    static constexpr uint32_t k_block_entries = 4;
    static constexpr int32_t k_none = -1;

    explicit sge_pool(uint32_t entries);

    // The head block of a copy of list, or k_none when the pool has too few blocks.
    int32_t store(std::span<const sge> list) noexcept;
    void release(int32_t head) noexcept;

    // Calls f(piece, piece_off, len, at) for every piece of bytes [off, off + len) of
    // the list: `len` bytes at `piece.addr + piece_off`, `at` bytes into the range.
    // Stops and returns false as soon as f does.
    template <typename F>
    bool for_range(int32_t head, uint64_t off, uint32_t len, F&& f) const noexcept
    {
        uint32_t at = 0;
        for (int32_t b = head; b != k_none && at < len; b = blocks_[b].next) {
            const block& blk = blocks_[b];
            for (uint32_t i = 0; i < blk.used && at < len; ++i) {
                const sge& e = blk.e[i];
                if (off >= e.length) {
                    off -= e.length;
                    continue;
                }
                const auto n = uint32_t(std::min<uint64_t>(e.length - off, len - at));
                if (!f(e, off, n, at)) {
                    return false;
                }
                at += n;
                off = 0;
            }
        }
        return at == len;
    }

    uint32_t free_blocks() const noexcept { return free_count_; }
    size_t bytes() const noexcept { return blocks_.capacity() * sizeof(block); }

private:
    struct block {
        sge e[k_block_entries];
        uint32_t used = 0;
        int32_t next = k_none;
    };
    std::vector<block> blocks_;
    int32_t free_ = k_none;
    uint32_t free_count_ = 0;
};

} // namespace metaroce::detail
