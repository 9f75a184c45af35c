// Counters as one flat JSON object (name -> value), walked from their table, for the
// DPDK driver's stats and the model's result alike. Json: nlohmann::json or
// nlohmann::ordered_json.
#pragma once

#include <span>
#include <string>

#include "metaroce/counters.hpp"

namespace metaroce::common {

template <typename Json, typename Counted>
Json counters_json(const Counted& c, std::span<const counter_field> table)
{
    Json j = Json::object();
    for_each_counter(c, table, [&](const std::string& name, uint64_t v, std::string_view) { j[name] = v; });
    return j;
}

// The endpoint's counters, and `rx_malformed`, the sum of the rx_malformed.<why>
// entries, which scripts and the conformance runner read.
template <typename Json>
Json counters_json(const counters& c)
{
    Json j = counters_json<Json>(c, counter_fields());
    j["rx_malformed"] = c.rx_malformed_total();
    return j;
}

} // namespace metaroce::common
