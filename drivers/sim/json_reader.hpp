// Typed, checked access to one JSON object of a scenario. Every error names the
// full key ("topology.hosts") so a user can find the mistake without a debugger.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace metaroce::sim {

struct scenario_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class json_reader {
public:
    // Throws unless j is an object whose keys are all in `allowed`.
    json_reader(const nlohmann::json& j, std::string path,
                std::initializer_list<std::string_view> allowed);

    bool has(std::string_view key) const;
    // Each reads `key` into out if present and leaves out alone otherwise.
    void read_uint(std::string_view key, uint64_t& out, uint64_t min, uint64_t max) const;
    void read_uint(std::string_view key, uint32_t& out, uint32_t min, uint32_t max) const;
    void read_uint(std::string_view key, uint16_t& out, uint16_t min, uint16_t max) const;
    void read_double(std::string_view key, double& out, double min, double max) const;
    void read_string(std::string_view key, std::string& out) const;
    void read_bool(std::string_view key, bool& out) const;
    const nlohmann::json& at(std::string_view key) const;
    std::string key_path(std::string_view key) const;

    [[noreturn]] void fail(std::string_view key, const std::string& what) const;

private:
    const nlohmann::json& j_;
    std::string path_;
};

} // namespace metaroce::sim
