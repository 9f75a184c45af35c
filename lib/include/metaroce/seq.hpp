// 32-bit sequence arithmetic (RFC 1982 style): PSNs and message numbers wrap, and
// comparisons are valid while two values are less than 2^31 apart.
#pragma once

#include <cstdint>

namespace metaroce {

constexpr int32_t seq_diff(uint32_t a, uint32_t b) noexcept
{
    return static_cast<int32_t>(a - b);
}
constexpr bool seq_lt(uint32_t a, uint32_t b) noexcept { return seq_diff(a, b) < 0; }
constexpr bool seq_le(uint32_t a, uint32_t b) noexcept { return seq_diff(a, b) <= 0; }
constexpr bool seq_gt(uint32_t a, uint32_t b) noexcept { return seq_diff(a, b) > 0; }
constexpr bool seq_ge(uint32_t a, uint32_t b) noexcept { return seq_diff(a, b) >= 0; }

} // namespace metaroce
