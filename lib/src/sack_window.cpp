#include "metaroce/sack_window.hpp"

#include <bit>
#include <cstring>

#include "metaroce/seq.hpp"

namespace metaroce {

void sack_window::record_slow(uint32_t& expected, bitmap& bits_, int32_t d) noexcept
{
    if (d < 0 || uint32_t(d) >= wire::k_sack_bits) {
        return;
    }
    bits_[uint32_t(d) / 64] |= uint64_t(1) << (uint32_t(d) % 64);
    // Advance over the run of received PSNs at the front.
    uint32_t run = 0;
    for (uint32_t w = 0; w < k_words; ++w) {
        if (bits_[w] == ~uint64_t(0)) {
            run += 64;
            continue;
        }
        run += uint32_t(__builtin_ctzll(~bits_[w]));
        break;
    }
    if (run > 0) {
        shift(expected, bits_, run);
    }
}

void sack_window::shift(uint32_t& expected, bitmap& bits_, uint32_t n) noexcept
{
    expected += n;
    if (n >= wire::k_sack_bits) {
        bits_.fill(0);
        return;
    }
    const uint32_t words = n / 64;
    const uint32_t bits = n % 64;
    for (uint32_t w = 0; w < k_words; ++w) {
        const uint32_t src = w + words;
        uint64_t lo = src < k_words ? bits_[src] : 0;
        uint64_t hi = src + 1 < k_words ? bits_[src + 1] : 0;
        bits_[w] = bits == 0 ? lo : (lo >> bits) | (hi << (64 - bits));
    }
}

} // namespace metaroce
