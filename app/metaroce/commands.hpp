// What the prompt's handler files share: argument parsing and the usage error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace metaroce::app {

// A number in decimal or 0x hex; throws std::invalid_argument naming `what`.
uint64_t parse_number(const std::string& s, const char* what);

// "Bad arguments: <why> (usage: <synopsis>)" at the prompt.
[[noreturn]] inline void usage_error(const std::string& synopsis, const std::string& why)
{
    throw std::invalid_argument(why + " (usage: " + synopsis + ")");
}

} // namespace metaroce::app
