// Scenario files: JSON in, a checked scenario out. Unknown keys, wrong types and
// impossible combinations throw scenario_error with a message naming the key.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/json_reader.hpp"
#include "sim/scenario.hpp"

namespace metaroce::sim {

scenario parse_scenario(const nlohmann::json& j);
scenario parse_scenario_text(std::string_view text);

// Cross-field checks; parse_scenario() calls it, code-built scenarios should too.
void validate(const scenario& s);

std::string_view to_string(pattern_kind p) noexcept;
std::string_view to_string(loss_kind l) noexcept;
std::string_view to_string(protocol_kind p) noexcept;
std::string_view op_name(wr_opcode op) noexcept;

} // namespace metaroce::sim
