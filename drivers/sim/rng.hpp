// Small seeded generators. splitmix64 derives independent seeds (per switch, per
// host); xoshiro256** draws the loss decisions. Both are fully reproducible.
#pragma once

#include <cstdint>

namespace metaroce::sim {

constexpr uint64_t splitmix64(uint64_t x) noexcept
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Seed of a named sub-stream, so adding a stream never shifts another one.
constexpr uint64_t derive_seed(uint64_t seed, uint64_t stream) noexcept
{
    return splitmix64(splitmix64(seed) ^ splitmix64(stream + 0x5EEDull));
}

class xoshiro256 {
public:
    explicit xoshiro256(uint64_t seed) noexcept
    {
        for (auto& w : s_) {
            seed = splitmix64(seed);
            w = seed;
        }
    }

    uint64_t next() noexcept
    {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 53 random bits.
    double uniform() noexcept { return double(next() >> 11) * 0x1.0p-53; }

private:
    static constexpr uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

    uint64_t s_[4];
};

} // namespace metaroce::sim
