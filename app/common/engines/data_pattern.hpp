// The bytes every test sends: byte k of an area is pattern_byte(k), so a byte placed
// at the wrong offset, or not placed at all, fails the comparison.
#pragma once

#include <cstdint>

namespace metaroce::engines {

inline constexpr uint8_t k_pattern_salt = 0x5a;

constexpr uint8_t pattern_byte(uint64_t k, uint8_t salt = k_pattern_salt) noexcept
{
    return uint8_t(k * 7 + (k >> 8) * 13 + salt);
}

// dst[i] = pattern_byte(from + i).
void fill_pattern(uint8_t* dst, uint64_t len, uint64_t from = 0) noexcept;
// How many of p[0, len) differ from pattern_byte(from + i).
uint64_t count_mismatches(const uint8_t* p, uint64_t len, uint64_t from = 0) noexcept;

} // namespace metaroce::engines
