#include "engines/data_pattern.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace metaroce::engines {

void fill_pattern(uint8_t* dst, uint64_t len, uint64_t from) noexcept
{
    for (uint64_t i = 0; i < len; ++i) {
        dst[i] = pattern_byte(from + i);
    }
}

uint64_t count_mismatches(const uint8_t* p, uint64_t len, uint64_t from) noexcept
{
    // A chunk of the pattern at a time, compared with memcmp: most areas match.
    std::array<uint8_t, 4096> want;
    uint64_t bad = 0;
    for (uint64_t done = 0; done < len;) {
        const uint64_t n = std::min<uint64_t>(want.size(), len - done);
        fill_pattern(want.data(), n, from + done);
        if (std::memcmp(p + done, want.data(), n) != 0) {
            for (uint64_t i = 0; i < n; ++i) {
                bad += p[done + i] != want[i];
            }
        }
        done += n;
    }
    return bad;
}

} // namespace metaroce::engines
