// The five tests both programs run (perftest's names): metaroce's "set fwd" engines
// and metaroce-perf's tests are the same engines.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace metaroce::engines {

enum class test_kind : uint8_t { write_bw, send_bw, read_bw, write_lat, send_lat };

inline constexpr std::array<test_kind, 5> k_tests = {test_kind::write_bw, test_kind::send_bw,
                                                     test_kind::read_bw, test_kind::write_lat,
                                                     test_kind::send_lat};

const char* test_name(test_kind t) noexcept;
std::optional<test_kind> parse_test(std::string_view name) noexcept;

constexpr bool is_bw(test_kind t) noexcept
{
    return t == test_kind::write_bw || t == test_kind::send_bw || t == test_kind::read_bw;
}

} // namespace metaroce::engines
