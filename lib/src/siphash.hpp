// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit PRF for short inputs.
// The handshake cookie (spec 7.7) is one; without the key nobody can mint one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace metaroce::detail {

class siphash24 {
public:
    siphash24(uint64_t k0, uint64_t k1) noexcept
        : v0_(k0 ^ 0x736f6d6570736575ull), v1_(k1 ^ 0x646f72616e646f6dull),
          v2_(k0 ^ 0x6c7967656e657261ull), v3_(k1 ^ 0x7465646279746573ull)
    {
    }

    // Input is fed in whole 64-bit little-endian words: all our inputs are fixed-size.
    siphash24& word(uint64_t m) noexcept
    {
        v3_ ^= m;
        round();
        round();
        v0_ ^= m;
        bytes_ += 8;
        return *this;
    }

    uint64_t finish() noexcept
    {
        const uint64_t b = uint64_t(bytes_ & 0xff) << 56;
        v3_ ^= b;
        round();
        round();
        v0_ ^= b;
        v2_ ^= 0xff;
        round();
        round();
        round();
        round();
        return v0_ ^ v1_ ^ v2_ ^ v3_;
    }

private:
    static uint64_t rotl(uint64_t x, int b) noexcept { return (x << b) | (x >> (64 - b)); }
    void round() noexcept
    {
        v0_ += v1_;
        v1_ = rotl(v1_, 13);
        v1_ ^= v0_;
        v0_ = rotl(v0_, 32);
        v2_ += v3_;
        v3_ = rotl(v3_, 16);
        v3_ ^= v2_;
        v0_ += v3_;
        v3_ = rotl(v3_, 21);
        v3_ ^= v0_;
        v2_ += v1_;
        v1_ = rotl(v1_, 17);
        v1_ ^= v2_;
        v2_ = rotl(v2_, 32);
    }

    uint64_t v0_, v1_, v2_, v3_;
    size_t bytes_ = 0;
};

} // namespace metaroce::detail
