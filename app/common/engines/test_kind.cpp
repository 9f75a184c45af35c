#include "engines/test_kind.hpp"

namespace metaroce::engines {

const char* test_name(test_kind t) noexcept
{
    switch (t) {
    case test_kind::write_bw: return "write_bw";
    case test_kind::send_bw: return "send_bw";
    case test_kind::read_bw: return "read_bw";
    case test_kind::write_lat: return "write_lat";
    case test_kind::send_lat: return "send_lat";
    }
    return "?";
}

std::optional<test_kind> parse_test(std::string_view name) noexcept
{
    for (test_kind t : k_tests) {
        if (name == test_name(t)) {
            return t;
        }
    }
    return std::nullopt;
}

} // namespace metaroce::engines
