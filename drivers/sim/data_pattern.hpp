// The bytes of message i of connection c: cheap to generate, different for every
// (connection, message, offset), so a misplaced or stale byte cannot pass a memcmp.
#pragma once

#include <cstdint>
#include <cstring>

#include "sim/rng.hpp"

namespace metaroce::sim {

inline void fill_pattern(uint8_t* dst, uint64_t len, uint32_t conn, uint64_t msg) noexcept
{
    // Word k is base + k * odd constant: distinct at every offset, and an add per
    // word keeps filling a gigabyte cheap next to the transfer itself.
    constexpr uint64_t k_step = 0x9E3779B97F4A7C15ull;
    uint64_t w = splitmix64((uint64_t(conn) << 40) ^ msg);
    uint64_t k = 0;
    for (; (k + 1) * 8 <= len; ++k) {
        std::memcpy(dst + k * 8, &w, 8);
        w += k_step;
    }
    std::memcpy(dst + k * 8, &w, len - k * 8);
}

} // namespace metaroce::sim
