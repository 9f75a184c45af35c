// Receiver side of one path: which PSNs arrived, as a cumulative point plus a
// 256-bit bitmap (spec 5.2). Packets on a path are sent in PSN order along one
// route, so a hole below a received PSN means loss, not reordering.
#pragma once

#include <array>
#include <cstdint>

#include "metaroce/wire/headers.hpp"

namespace metaroce {

class sack_window {
public:
    enum class verdict : uint8_t { fresh, duplicate, beyond_window };

    void reset(uint32_t first_psn) noexcept
    {
        expected_ = first_psn;
        bits_.fill(0);
    }
    // Classifies a PSN without recording it.
    verdict classify(uint32_t psn) const noexcept;
    // Records a fresh PSN and advances the cumulative point over any run it completes.
    void record(uint32_t psn) noexcept;
    // True if some PSN above the cumulative point has arrived (a hole exists).
    bool has_hole() const noexcept;

    uint32_t expected() const noexcept { return expected_; }
    bool received(uint32_t psn) const noexcept;
    // Writes the bitmap as it goes on the wire (bit i = PSN expected()+i, LSB first).
    void to_wire(uint8_t (&out)[wire::k_sack_bits / 8]) const noexcept;

private:
    static constexpr uint32_t k_words = wire::k_sack_bits / 64;
    void shift(uint32_t n) noexcept;

    uint32_t expected_ = 0;
    std::array<uint64_t, k_words> bits_{}; // bit i of word w = PSN expected_ + 64w + i
};

} // namespace metaroce
