// What the prompt's handler files share: argument parsing and the usage error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace metaroce::app {

// One prompt command as the table declares it (commands.cpp): the fixed words that
// select it ("show port stats"), its synopsis and its help.
struct command_info {
    std::string words;
    std::string synopsis;
    std::string help;
};
std::vector<command_info> command_table();

// A number in decimal or 0x hex; throws std::invalid_argument naming `what`.
uint64_t parse_number(const std::string& s, const char* what);

// "Bad arguments: <why> (usage: <synopsis>)" at the prompt.
[[noreturn]] inline void usage_error(const std::string& synopsis, const std::string& why)
{
    throw std::invalid_argument(why + " (usage: " + synopsis + ")");
}

} // namespace metaroce::app
