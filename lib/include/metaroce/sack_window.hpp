// Receiver side of one path: which PSNs arrived, as a cumulative point plus a
// 256-bit bitmap (spec 5.2). Packets on a path are sent in PSN order along one
// route, so a hole below a received PSN means loss, not reordering.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "metaroce/seq.hpp"
#include "metaroce/wire/headers.hpp"

namespace metaroce {

class sack_window {
public:
    enum class verdict : uint8_t { fresh, duplicate, beyond_window };
    static constexpr uint32_t k_words = wire::k_sack_bits / 64;
    using bitmap = std::array<uint64_t, k_words>; // bit i of word w = PSN expected + 64w + i

    void reset(uint32_t first_psn) noexcept
    {
        expected_ = first_psn;
        bits_.fill(0);
    }
    // Classifies a PSN without recording it.
    verdict classify(uint32_t psn) const noexcept { return classify(expected_, bits_, psn); }
    // Records a fresh PSN and advances the cumulative point over any run it completes.
    void record(uint32_t psn) noexcept { record(expected_, bits_, psn); }
    // True if some PSN above the cumulative point has arrived (a hole exists).
    bool has_hole() const noexcept { return any(bits_); }

    uint32_t expected() const noexcept { return expected_; }
    bool received(uint32_t psn) const noexcept
    {
        const int32_t d = seq_diff(psn, expected_);
        if (d < 0) {
            return true;
        }
        return uint32_t(d) < wire::k_sack_bits && bit(bits_, uint32_t(d));
    }
    // Writes the bitmap as it goes on the wire (bit i = PSN expected()+i, LSB first).
    void to_wire(uint8_t (&out)[wire::k_sack_bits / 8]) const noexcept { to_wire(bits_, out); }

    // The same rules on a window kept elsewhere: the core holds a path's bitmap in a
    // pool only while it has a hole (an all-zero bitmap otherwise).
    static verdict classify(uint32_t expected, const bitmap& bits, uint32_t psn) noexcept
    {
        const int32_t d = seq_diff(psn, expected);
        if (d < 0) {
            return verdict::duplicate;
        }
        if (uint32_t(d) >= wire::k_sack_bits) {
            return verdict::beyond_window;
        }
        return bit(bits, uint32_t(d)) ? verdict::duplicate : verdict::fresh;
    }
    static void record(uint32_t& expected, bitmap& bits, uint32_t psn) noexcept
    {
        const int32_t d = seq_diff(psn, expected);
        if (d == 0 && !any(bits)) {
            ++expected; // in order with nothing above it, the usual case: no bitmap to shift
            return;
        }
        record_slow(expected, bits, d);
    }
    static bool any(const bitmap& bits) noexcept
    {
        static_assert(k_words == 4);
        // Bit 0 is never set after record(), so any set bit is above a hole.
        return (bits[0] | bits[1] | bits[2] | bits[3]) != 0;
    }
    // Inline: once per ACK.
    static void to_wire(const bitmap& bits, uint8_t (&out)[wire::k_sack_bits / 8]) noexcept
    {
        if constexpr (std::endian::native == std::endian::little) {
            std::memcpy(out, bits.data(), sizeof(out)); // the wire order is the words' LSB first
        } else {
            for (uint32_t w = 0; w < k_words; ++w) {
                for (uint32_t b = 0; b < 8; ++b) {
                    out[w * 8 + b] = uint8_t(bits[w] >> (8 * b));
                }
            }
        }
    }

private:
    static bool bit(const bitmap& bits, uint32_t d) noexcept { return (bits[d / 64] >> (d % 64)) & 1u; }
    static void record_slow(uint32_t& expected, bitmap& bits, int32_t d) noexcept;
    static void shift(uint32_t& expected, bitmap& bits, uint32_t n) noexcept;

    uint32_t expected_ = 0;
    bitmap bits_{};
};

} // namespace metaroce
