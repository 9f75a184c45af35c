// Receive window of one path: cumulative point, 256-bit SACK bitmap, wire layout.
#include <catch2/catch.hpp>

#include "metaroce/sack_window.hpp"

using namespace metaroce;
using verdict = sack_window::verdict;

namespace {

bool wire_bit(const uint8_t (&b)[32], uint32_t i) { return (b[i / 8] >> (i % 8)) & 1u; }

} // namespace

TEST_CASE("in-order PSNs advance the cumulative point", "[sack]")
{
    sack_window w;
    w.reset(100);
    CHECK(w.expected() == 100);
    CHECK_FALSE(w.has_hole());
    for (uint32_t p = 100; p < 1100; ++p) {
        REQUIRE(w.classify(p) == verdict::fresh);
        w.record(p);
        REQUIRE(w.expected() == p + 1);
        REQUIRE_FALSE(w.has_hole());
    }
    uint8_t bits[32];
    w.to_wire(bits);
    for (uint8_t b : bits) {
        CHECK(b == 0);
    }
}

TEST_CASE("a gap holds the cumulative point until it is filled", "[sack]")
{
    sack_window w;
    w.reset(0);
    w.record(0);
    w.record(2);
    w.record(3);
    CHECK(w.expected() == 1);
    CHECK(w.has_hole());
    CHECK(w.received(0));
    CHECK_FALSE(w.received(1));
    CHECK(w.received(2));
    CHECK(w.received(3));
    CHECK_FALSE(w.received(4));
    CHECK(w.classify(1) == verdict::fresh);
    CHECK(w.classify(2) == verdict::duplicate);
    CHECK(w.classify(0) == verdict::duplicate);
    uint8_t bits[32];
    w.to_wire(bits);
    CHECK(bits[0] == 0x06); // PSN 2 and 3 = bits 1 and 2
    w.record(1);
    CHECK(w.expected() == 4);
    CHECK_FALSE(w.has_hole());
    w.to_wire(bits);
    CHECK(bits[0] == 0);
}

TEST_CASE("duplicates are classified and do not change the window", "[sack]")
{
    sack_window w;
    w.reset(50);
    w.record(50);
    w.record(52);
    CHECK(w.classify(50) == verdict::duplicate);
    CHECK(w.classify(49) == verdict::duplicate);
    CHECK(w.classify(50 - 0x7fffffffu) == verdict::duplicate);
    CHECK(w.classify(52) == verdict::duplicate);
    w.record(52); // recording a duplicate is harmless
    w.record(40);
    CHECK(w.expected() == 51);
    uint8_t bits[32];
    w.to_wire(bits);
    CHECK(bits[0] == 0x02);
}

TEST_CASE("the window is exactly 256 PSNs wide", "[sack]")
{
    sack_window w;
    w.reset(1000);
    CHECK(w.classify(1000 + 255) == verdict::fresh);
    CHECK(w.classify(1000 + 256) == verdict::beyond_window);
    CHECK(w.classify(1000u + 0x70000000u) == verdict::beyond_window);
    w.record(1000 + 256); // ignored
    CHECK_FALSE(w.has_hole());
    CHECK_FALSE(w.received(1000 + 256));
    w.record(1000 + 255);
    CHECK(w.has_hole());
    uint8_t bits[32];
    w.to_wire(bits);
    CHECK(bits[31] == 0x80);
    // Filling 1000..1254 completes the run up to and including 1255.
    for (uint32_t p = 1000; p < 1255; ++p) {
        w.record(p);
    }
    CHECK(w.expected() == 1256);
    CHECK_FALSE(w.has_hole());
    CHECK(w.classify(1256 + 255) == verdict::fresh);
    CHECK(w.classify(1256 + 256) == verdict::beyond_window);
}

TEST_CASE("to_wire: bit i of byte i/8, LSB first, is PSN expected+i", "[sack]")
{
    sack_window w;
    w.reset(7);
    const uint32_t offs[] = {1, 7, 8, 9, 63, 64, 65, 127, 128, 200, 254, 255};
    for (uint32_t o : offs) {
        w.record(7 + o);
    }
    uint8_t bits[32];
    w.to_wire(bits);
    for (uint32_t i = 0; i < 256; ++i) {
        const bool want = std::find(std::begin(offs), std::end(offs), i) != std::end(offs);
        INFO("bit " << i);
        CHECK(wire_bit(bits, i) == want);
    }
    CHECK(bits[0] == 0x82);
    CHECK(bits[1] == 0x03);
    CHECK(bits[7] == 0x80);
    CHECK(bits[8] == 0x03);
    CHECK(bits[31] == 0xc0);
    // After the hole at +0 fills, everything shifts down by the run (+0, +1).
    w.record(7);
    CHECK(w.expected() == 9);
    w.to_wire(bits);
    for (uint32_t i = 0; i < 256; ++i) {
        const bool want = i + 2 < 256 + 2 &&
                          std::find(std::begin(offs), std::end(offs), i + 2) != std::end(offs);
        INFO("after shift, bit " << i);
        CHECK(wire_bit(bits, i) == want);
    }
}

TEST_CASE("shifts of every size keep the bitmap consistent", "[sack]")
{
    // Reference model: a set of received PSNs, compared after every record().
    for (uint32_t stride : {1u, 3u, 17u, 64u, 65u, 130u}) {
        sack_window w;
        w.reset(0);
        std::vector<bool> got(4096, false);
        uint32_t expected = 0;
        for (uint32_t k = 0; k < 2000; ++k) {
            // Visit PSNs in a scrambled order that stays inside the window.
            const uint32_t psn = expected + (k * stride) % 200;
            if (w.classify(psn) == verdict::fresh) {
                REQUIRE_FALSE(got[psn]);
                w.record(psn);
                got[psn] = true;
            }
            while (got[expected]) {
                ++expected;
            }
            REQUIRE(w.expected() == expected);
            uint8_t bits[32];
            w.to_wire(bits);
            bool hole = false;
            for (uint32_t i = 0; i < 256; ++i) {
                const bool want = expected + i < got.size() && got[expected + i];
                hole = hole || want;
                REQUIRE(wire_bit(bits, i) == want);
            }
            REQUIRE(w.has_hole() == hole);
        }
    }
}

TEST_CASE("PSNs wrap around 2^32", "[sack]")
{
    sack_window w;
    w.reset(0xFFFFFF00u);
    for (uint32_t p = 0xFFFFFF00u; p != 0x10u; ++p) {
        if (p == 0xFFFFFFFEu) {
            continue; // leave a hole just before zero
        }
        REQUIRE(w.classify(p) == verdict::fresh);
        w.record(p);
    }
    CHECK(w.expected() == 0xFFFFFFFEu);
    CHECK(w.has_hole());
    CHECK(w.received(0xFFFFFFFFu));
    CHECK(w.received(0x5));
    CHECK_FALSE(w.received(0x10));
    CHECK(w.classify(0xFFFFFF80u) == verdict::duplicate);
    CHECK(w.classify(0x3) == verdict::duplicate);
    CHECK(w.classify(0xFFFFFFFEu + 256) == verdict::beyond_window); // 0xFE past zero
    CHECK(w.classify(0xFFFFFFFEu + 255) == verdict::fresh);
    uint8_t bits[32];
    w.to_wire(bits);
    // bits 1 (0xFFFFFFFF) through 17 (0x0F) set
    for (uint32_t i = 0; i < 32; ++i) {
        INFO("bit " << i);
        CHECK(wire_bit(bits, i) == (i >= 1 && i <= 17));
    }
    w.record(0xFFFFFFFEu);
    CHECK(w.expected() == 0x10u);
    CHECK_FALSE(w.has_hole());
    CHECK(w.classify(0xFFFFFFFFu) == verdict::duplicate);
    CHECK(w.classify(0x10u) == verdict::fresh);
}
