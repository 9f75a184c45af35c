// JSON laid out for a terminal: one member per line, and a container that holds only
// numbers, strings, booleans or nulls filled onto as few lines as the width allows, so
// a timeline does not print one number per line. The text parses as ordinary JSON.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace metaroce::sim_cli {

std::string compact_dump(const nlohmann::ordered_json& j, size_t width = 100);

} // namespace metaroce::sim_cli
