// The counter table names every counter once, by the names the parse errors carry,
// and reads each name from its own field.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "metaroce/counters.hpp"

using namespace metaroce;

TEST_CASE("the counter table names every counter once", "[counters]")
{
    // Give every uint64_t of the struct its own value: a name read from the wrong
    // field, or two names for one field, shows up as a wrong or repeated value.
    counters c;
    std::vector<uint64_t> words(sizeof(counters) / sizeof(uint64_t));
    for (size_t i = 0; i < words.size(); ++i) {
        words[i] = 1000 + i;
    }
    std::memcpy(static_cast<void*>(&c), words.data(), sizeof c);
    c.rx_malformed[0] = 0; // parse_error::none is never counted

    std::set<std::string> names;
    std::set<uint64_t> values;
    for_each_counter(c, counter_fields(), [&](const std::string& name, uint64_t v, std::string_view help) {
        CHECK(!help.empty());
        CHECK(names.insert(name).second);
        CHECK(values.insert(v).second);
    });
    CHECK(names.size() == words.size() - 1);
    CHECK(values.count(0) == 0);

    uint64_t seen = 0;
    for_each_counter(c, counter_fields(), [&](const std::string& name, uint64_t v, std::string_view) {
        if (name == "rx_packets") {
            CHECK(v == c.rx_packets);
            ++seen;
        } else if (name == "conns_reaped") {
            CHECK(v == c.conns_reaped);
            ++seen;
        }
        for (size_t i = 1; i < size_t(wire::parse_error::count_); ++i) {
            if (name == "rx_malformed." + std::string(wire::to_string(wire::parse_error(i)))) {
                CHECK(v == c.rx_malformed[i]);
                ++seen;
            }
        }
    });
    CHECK(seen == 2 + size_t(wire::parse_error::count_) - 1);
}

TEST_CASE("add_counters sums every counter of the table", "[counters]")
{
    counters a;
    counters b;
    a.rx_hint_floored = 2;
    b.rx_hint_floored = 3;
    a.cookies_sent = 1;
    b.rx_malformed[size_t(wire::parse_error::empty_payload)] = 7;
    add_counters(a, b, counter_fields());
    CHECK(a.rx_hint_floored == 5);
    CHECK(a.cookies_sent == 1);
    CHECK(a.rx_malformed[size_t(wire::parse_error::empty_payload)] == 7);
}
