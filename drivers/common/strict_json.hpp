// JSON parsing that refuses duplicate keys: nlohmann keeps the last of two equal keys
// silently, so `"max_rto_us": 1000, ..., "max_rto_us": 0` would hide a setting. Used by
// every configuration and scenario reader.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace metaroce::common {

// Throws std::invalid_argument naming the key and the object it repeats in, and
// passes nlohmann's parse_error through for malformed text.
inline nlohmann::json parse_strict_json(std::string_view text)
{
    using json = nlohmann::json;
    struct frame {
        std::string path;
        std::vector<std::string> keys;
    };
    std::vector<frame> open;     // objects being parsed, outermost first
    std::string last_key;        // the key whose value comes next
    json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
        switch (ev) {
        case json::parse_event_t::object_start: {
            std::string path = open.empty() ? std::string() : open.back().path;
            if (!open.empty() && !last_key.empty()) {
                path += (path.empty() ? "" : ".") + last_key;
            }
            open.push_back({path, {}});
            last_key.clear();
            break;
        }
        case json::parse_event_t::object_end:
            open.pop_back();
            break;
        case json::parse_event_t::key: {
            last_key = parsed.get<std::string>();
            auto& keys = open.back().keys;
            for (const std::string& k : keys) {
                if (k == last_key) {
                    const std::string where = open.back().path.empty() ? "the top level" : "'" + open.back().path + "'";
                    throw std::invalid_argument("duplicate key '" + last_key + "' in " + where);
                }
            }
            keys.push_back(last_key);
            break;
        }
        case json::parse_event_t::array_start:
            last_key.clear(); // objects inside arrays are named by their parent key only
            break;
        default:
            break;
        }
        return true;
    };
    return json::parse(text.begin(), text.end(), cb);
}

} // namespace metaroce::common
