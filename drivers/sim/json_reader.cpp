#include "sim/json_reader.hpp"

#include <algorithm>
#include <cmath>

namespace metaroce::sim {

namespace {
std::string type_name(const nlohmann::json& v)
{
    return std::string(v.type_name());
}
} // namespace

json_reader::json_reader(const nlohmann::json& j, std::string path,
                         std::initializer_list<std::string_view> allowed)
    : j_(j), path_(std::move(path))
{
    const std::string where = path_.empty() ? "the scenario" : "'" + path_ + "'";
    if (!j_.is_object()) {
        throw scenario_error(where + " must be an object, got " + type_name(j_));
    }
    for (const auto& [key, value] : j_.items()) {
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
            std::string list;
            for (auto a : allowed) {
                list += (list.empty() ? "" : ", ") + std::string(a);
            }
            throw scenario_error("unknown key '" + key_path(key) + "' (allowed here: " + list +
                                 ")");
        }
    }
}

std::string json_reader::key_path(std::string_view key) const
{
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void json_reader::fail(std::string_view key, const std::string& what) const
{
    throw scenario_error("'" + key_path(key) + "' " + what);
}

bool json_reader::has(std::string_view key) const
{
    return j_.contains(key);
}

const nlohmann::json& json_reader::at(std::string_view key) const
{
    return j_.at(std::string(key));
}

void json_reader::read_uint(std::string_view key, uint64_t& out, uint64_t min, uint64_t max) const
{
    if (!has(key)) {
        return;
    }
    const auto& v = at(key);
    // JSON has one number type; accept 3.0 but not 3.5 or -1.
    uint64_t n = 0;
    if (v.is_number_unsigned()) {
        n = v.get<uint64_t>();
    } else if (v.is_number_float() && v.get<double>() >= 0 && std::floor(v.get<double>()) ==
                                                                   v.get<double>() &&
               v.get<double>() < 1.8e19) {
        n = uint64_t(v.get<double>());
    } else if (v.is_number()) {
        fail(key, "must be a non-negative integer, got " + v.dump());
    } else {
        fail(key, "must be a non-negative integer, got " + type_name(v));
    }
    if (n < min || n > max) {
        fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                      std::to_string(n));
    }
    out = n;
}

void json_reader::read_uint(std::string_view key, uint32_t& out, uint32_t min, uint32_t max) const
{
    uint64_t v = out;
    read_uint(key, v, min, max);
    out = uint32_t(v);
}

void json_reader::read_uint(std::string_view key, uint16_t& out, uint16_t min, uint16_t max) const
{
    uint64_t v = out;
    read_uint(key, v, min, max);
    out = uint16_t(v);
}

void json_reader::read_double(std::string_view key, double& out, double min, double max) const
{
    if (!has(key)) {
        return;
    }
    const auto& v = at(key);
    if (!v.is_number()) {
        fail(key, "must be a number, got " + type_name(v));
    }
    const double d = v.get<double>();
    if (!(d >= min && d <= max)) {
        fail(key, "must be in [" + nlohmann::json(min).dump() + ", " + nlohmann::json(max).dump() +
                      "], got " + v.dump());
    }
    out = d;
}

void json_reader::read_string(std::string_view key, std::string& out) const
{
    if (!has(key)) {
        return;
    }
    const auto& v = at(key);
    if (!v.is_string()) {
        fail(key, "must be a string, got " + type_name(v));
    }
    out = v.get<std::string>();
}

void json_reader::read_bool(std::string_view key, bool& out) const
{
    if (!has(key)) {
        return;
    }
    const auto& v = at(key);
    if (!v.is_boolean()) {
        fail(key, "must be true or false, got " + type_name(v));
    }
    out = v.get<bool>();
}

} // namespace metaroce::sim
