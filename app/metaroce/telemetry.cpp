#include "telemetry.hpp"

#include <rte_telemetry.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "app.hpp"

namespace metaroce::app {

namespace {

application* g_app = nullptr;

// Telemetry names allow letters, digits, '_' and '/'.
std::string tel_name(const std::string& key)
{
    std::string n = key;
    for (char& ch : n) {
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                        ch == '_' || ch == '/';
        ch = ok ? ch : '_';
    }
    return n;
}

// Numbers stay numbers: 22.11 has no float, so fractions (windows in packets) round.
bool is_signed(const nlohmann::json& v)
{
    return (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0) ||
           (v.is_number_float() && v.get<double>() < 0);
}
uint64_t as_u64(const nlohmann::json& v)
{
    if (v.is_boolean()) {
        return v.get<bool>() ? 1 : 0;
    }
    return v.is_number_float() ? uint64_t(std::llround(v.get<double>())) : v.get<uint64_t>();
}
int as_int(const nlohmann::json& v)
{
    return v.is_number_float() ? int(std::lround(v.get<double>())) : int(v.get<int64_t>());
}
std::string as_string(const nlohmann::json& v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

int add_scalar(rte_tel_data* d, const std::string& name, const nlohmann::json& v)
{
    if (v.is_string() || v.is_null()) {
        return rte_tel_data_add_dict_string(d, name.c_str(), v.is_null() ? "" : v.get<std::string>().c_str());
    }
    if (is_signed(v)) {
        return rte_tel_data_add_dict_int(d, name.c_str(), as_int(v));
    }
    return rte_tel_data_add_dict_u64(d, name.c_str(), as_u64(v));
}

// An array of scalars becomes a container, typed by its elements.
int add_array(rte_tel_data* d, const std::string& name, const nlohmann::json& a)
{
    if (a.size() > RTE_TEL_MAX_ARRAY_ENTRIES) {
        return -E2BIG;
    }
    bool strings = false, negative = false;
    for (const auto& v : a) {
        strings = strings || v.is_string() || v.is_null();
        negative = negative || is_signed(v);
    }
    rte_tel_data* c = rte_tel_data_alloc();
    if (c == nullptr) {
        return -ENOMEM;
    }
    rte_tel_data_start_array(c, strings ? RTE_TEL_STRING_VAL : negative ? RTE_TEL_INT_VAL : RTE_TEL_U64_VAL);
    for (const auto& v : a) {
        if (strings) {
            rte_tel_data_add_array_string(c, as_string(v).c_str());
        } else if (negative) {
            rte_tel_data_add_array_int(c, as_int(v));
        } else {
            rte_tel_data_add_array_u64(c, as_u64(v));
        }
    }
    const int rc = rte_tel_data_add_dict_container(d, name.c_str(), c, 0);
    if (rc != 0) {
        rte_tel_data_free(c);
    }
    return rc;
}

int add_value(rte_tel_data* d, const std::string& name, const nlohmann::json& v, size_t& entries);

// A list of objects becomes one array per field ("columns"), index = position.
int add_table(rte_tel_data* d, const std::string& prefix, const nlohmann::json& rows, size_t& entries)
{
    nlohmann::json cols = nlohmann::json::object();
    for (const auto& row : rows) {
        for (auto it = row.begin(); it != row.end(); ++it) {
            if (!cols.contains(it.key())) {
                cols[it.key()] = nlohmann::json::array();
            }
        }
    }
    for (auto c = cols.begin(); c != cols.end(); ++c) {
        for (const auto& row : rows) {
            c.value().push_back(row.contains(c.key()) ? row[c.key()] : nlohmann::json());
        }
        const int rc = add_value(d, prefix.empty() ? c.key() : prefix + "/" + c.key(), c.value(), entries);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int add_value(rte_tel_data* d, const std::string& name, const nlohmann::json& v, size_t& entries)
{
    if (v.is_object()) {
        for (auto it = v.begin(); it != v.end(); ++it) {
            const int rc = add_value(d, name.empty() ? it.key() : name + "/" + it.key(), it.value(), entries);
            if (rc != 0) {
                return rc;
            }
        }
        return 0;
    }
    if (v.is_array() && !v.empty() && v.front().is_object()) {
        return add_table(d, name, v, entries);
    }
    if (++entries > RTE_TEL_MAX_DICT_ENTRIES) {
        return -E2BIG;
    }
    return v.is_array() ? add_array(d, tel_name(name), v) : add_scalar(d, tel_name(name), v);
}

bool parse_params(const char* params, std::vector<unsigned long>& out)
{
    const std::string s = params == nullptr ? "" : params;
    size_t at = 0;
    while (at < s.size()) {
        const size_t comma = s.find(',', at);
        const std::string part = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        char* end = nullptr;
        const unsigned long v = std::strtoul(part.c_str(), &end, 0);
        if (part.empty() || *end != '\0') {
            return false;
        }
        out.push_back(v);
        at = comma == std::string::npos ? s.size() : comma + 1;
    }
    return true;
}

int reply(rte_tel_data* d, const std::string& text) { return to_telemetry(d, nlohmann::json::parse(text)); }

int tel_stats(const char*, const char*, rte_tel_data* d)
{
    return g_app == nullptr ? -ENODEV : reply(d, g_app->stats_json());
}
int tel_planes(const char*, const char*, rte_tel_data* d)
{
    if (g_app == nullptr) {
        return -ENODEV;
    }
    // {"0": {...}, "1": {...}} -> one array per field, index = plane.
    const nlohmann::json by_plane = nlohmann::json::parse(g_app->planes_json());
    nlohmann::json rows = nlohmann::json::array();
    for (size_t p = 0; by_plane.contains(std::to_string(p)); ++p) {
        rows.push_back(by_plane[std::to_string(p)]);
    }
    return to_telemetry(d, {{"plane", rows}});
}
// 0 with 'min'..'max' numbers parsed from `params`, or the errno to reply with.
int numbers(const char* params, size_t min, size_t max, std::vector<unsigned long>& out)
{
    if (g_app == nullptr) {
        return -ENODEV;
    }
    return parse_params(params, out) && out.size() >= min && out.size() <= max ? 0 : -EINVAL;
}

int tel_conns(const char*, const char* params, rte_tel_data* d)
{
    std::vector<unsigned long> p;
    if (const int rc = numbers(params, 0, 1, p); rc != 0) {
        return rc;
    }
    return reply(d, g_app->conns_page_json(p.empty() ? 0 : p[0], k_conns_page));
}
int tel_conn(const char*, const char* params, rte_tel_data* d)
{
    std::vector<unsigned long> p;
    if (const int rc = numbers(params, 1, 1, p); rc != 0) {
        return rc;
    }
    return reply(d, g_app->paths_json(conn_id(p[0])));
}
int tel_paths(const char*, const char* params, rte_tel_data* d)
{
    std::vector<unsigned long> p;
    if (const int rc = numbers(params, 1, 1, p); rc != 0) {
        return rc;
    }
    const nlohmann::json c = nlohmann::json::parse(g_app->paths_json(conn_id(p[0])));
    return to_telemetry(d, c.contains("path") ? nlohmann::json{{"path", c["path"]}} : nlohmann::json::object());
}

} // namespace

int to_telemetry(rte_tel_data* d, const nlohmann::json& j)
{
    rte_tel_data_start_dict(d);
    size_t entries = 0;
    return add_value(d, "", j, entries);
}

void detach_telemetry() { g_app = nullptr; }

void register_telemetry(application& app)
{
    g_app = &app;
    rte_telemetry_register_cmd("/metaroce/stats", tel_stats,
                               "Datapath and transport counters. No parameters");
    rte_telemetry_register_cmd("/metaroce/conns", tel_conns,
                               "Connections, one array per field. Parameters: first index (pages of 256)");
    rte_telemetry_register_cmd("/metaroce/conn", tel_conn,
                               "One connection with its paths (path/<field> arrays). Parameters: connection id");
    rte_telemetry_register_cmd("/metaroce/paths", tel_paths,
                               "Paths of one connection, one array per field. Parameters: connection id");
    rte_telemetry_register_cmd("/metaroce/planes", tel_planes, "Planes (ports), one array per field. No parameters");
}

} // namespace metaroce::app
