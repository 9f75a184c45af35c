// Big-endian wire integers. They refuse implicit conversion from host order, so a
// field can only be filled through be*_t::from_host() and read through host().
#pragma once

#include <bit>
#include <cstdint>

namespace metaroce::wire {

template <typename T>
constexpr T byteswap_if_little(T v) noexcept
{
    if constexpr (std::endian::native == std::endian::big || sizeof(T) == 1) {
        return v;
    } else if constexpr (sizeof(T) == 2) {
        return static_cast<T>(__builtin_bswap16(v));
    } else if constexpr (sizeof(T) == 4) {
        return static_cast<T>(__builtin_bswap32(v));
    } else {
        static_assert(sizeof(T) == 8);
        return static_cast<T>(__builtin_bswap64(v));
    }
}

// Packed (alignment 1) so it can sit at any offset inside a packed header.
template <typename T>
class __attribute__((packed)) big_endian {
public:
    constexpr big_endian() noexcept = default;
    static constexpr big_endian from_host(T v) noexcept
    {
        big_endian b;
        b.raw_ = byteswap_if_little(v);
        return b;
    }
    constexpr T host() const noexcept { return byteswap_if_little(raw_); }
    constexpr T raw() const noexcept { return raw_; }
    friend constexpr bool operator==(big_endian a, big_endian b) noexcept { return a.raw_ == b.raw_; }

private:
    T raw_; // trivial, so headers stay POD; value-initialise them ({}) to zero
};

using be16_t = big_endian<uint16_t>;
using be32_t = big_endian<uint32_t>;
using be64_t = big_endian<uint64_t>;

static_assert(sizeof(be16_t) == 2 && sizeof(be32_t) == 4 && sizeof(be64_t) == 8);

} // namespace metaroce::wire
