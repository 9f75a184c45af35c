#include "verbs/settings.hpp"

#include <arpa/inet.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace metaroce::verbs {
namespace {

bool parse_addr(const std::string& s, uint32_t& out)
{
    in_addr a{};
    if (inet_pton(AF_INET, s.c_str(), &a) != 1) {
        return false;
    }
    out = ntohl(a.s_addr);
    return true;
}

bool parse_uint(const std::string& s, uint64_t max, uint64_t& out)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (s.empty() || *end != '\0' || errno != 0 || v > max) {
        return false;
    }
    out = v;
    return true;
}

void apply(settings& st, const std::string& key, const std::string& val)
{
    uint64_t u = 0;
    auto bad = [&](const char* why) {
        if (st.error.empty()) {
            st.error = key + "=" + val + ": " + why;
        }
    };
    if (key == "METAROCE_ADDR") {
        st.plane_addrs.clear();
        std::stringstream ss(val);
        std::string one;
        while (std::getline(ss, one, ',')) {
            uint32_t a = 0;
            if (!parse_addr(one, a)) {
                return bad("not a list of IPv4 addresses (one per plane)");
            }
            st.plane_addrs.push_back(a);
        }
        if (st.plane_addrs.empty() || st.plane_addrs.size() > 8) {
            return bad("1..8 plane addresses");
        }
    } else if (key == "METAROCE_PORT") {
        if (!parse_uint(val, 65535, u) || u == 0) {
            return bad("a UDP port 1..65535");
        }
        st.port = uint16_t(u);
    } else if (key == "METAROCE_BACKEND") {
        if (val != "udp" && val != "dpdk") {
            return bad("udp or dpdk");
        }
        st.backend = val;
    } else if (key == "METAROCE_EAL") {
        st.eal = val;
    } else if (key == "METAROCE_DPDK_PORTS") {
        st.dpdk_ports.clear();
        std::stringstream ss(val);
        std::string one;
        while (std::getline(ss, one, ',')) {
            if (!parse_uint(one, 1023, u)) {
                return bad("a list of DPDK port ids (one per plane)");
            }
            st.dpdk_ports.push_back(uint16_t(u));
        }
        if (st.dpdk_ports.empty() || st.dpdk_ports.size() > 8) {
            return bad("1..8 port ids");
        }
    } else if (key == "METAROCE_MTU") {
        if (!parse_uint(val, 4096, u) || (u != 256 && u != 512 && u != 1024 && u != 2048 && u != 4096)) {
            return bad("256, 512, 1024, 2048 or 4096");
        }
        st.mtu = uint16_t(u);
    } else if (key == "METAROCE_PATHS") {
        if (!parse_uint(val, 256, u) || u == 0) {
            return bad("1..256");
        }
        st.paths = uint16_t(u);
    } else if (key == "METAROCE_MAX_STREAMS") {
        if (!parse_uint(val, 4096, u) || u < 2) {
            return bad("2..4096");
        }
        st.max_streams = uint16_t(u);
    } else if (key == "METAROCE_MIN_RTO_US") {
        if (!parse_uint(val, 1'000'000, u) || u == 0) {
            return bad("1..1000000 microseconds");
        }
        st.min_rto_us = uint32_t(u);
    } else if (key == "METAROCE_TEST_DROP") {
        char* end = nullptr;
        const double d = std::strtod(val.c_str(), &end);
        if (val.empty() || *end != '\0' || !(d >= 0 && d < 1)) {
            return bad("a drop probability in [0, 1)");
        }
        st.test_drop_rate = d;
    } else if (key == "METAROCE_LOG") {
        st.log = val == "2" ? 2 : val == "1" ? 1 : 0;
    }
}

const char* const k_keys[] = {"METAROCE_ADDR", "METAROCE_PORT", "METAROCE_BACKEND",
                              "METAROCE_MTU", "METAROCE_PATHS", "METAROCE_MAX_STREAMS",
                              "METAROCE_TEST_DROP", "METAROCE_LOG", "METAROCE_EAL",
                              "METAROCE_DPDK_PORTS", "METAROCE_MIN_RTO_US"};

} // namespace

settings load_settings()
{
    settings st;
    if (const char* file = std::getenv("METAROCE_CONFIG"); file != nullptr && *file != '\0') {
        std::ifstream in(file);
        if (!in) {
            st.error = std::string("METAROCE_CONFIG: cannot read ") + file;
            return st;
        }
        std::string line;
        int n = 0;
        while (std::getline(in, line)) {
            ++n;
            const size_t hash = line.find('#');
            if (hash != std::string::npos) {
                line.resize(hash);
            }
            const size_t b = line.find_first_not_of(" \t");
            if (b == std::string::npos) {
                continue;
            }
            const size_t eq = line.find('=');
            if (eq == std::string::npos) {
                st.error = std::string(file) + ":" + std::to_string(n) + ": expected KEY=VALUE";
                return st;
            }
            std::string key = line.substr(b, eq - b);
            std::string val = line.substr(eq + 1);
            key.erase(key.find_last_not_of(" \t") + 1);
            val.erase(0, val.find_first_not_of(" \t"));
            val.erase(val.find_last_not_of(" \t\r") + 1);
            bool known = false;
            for (const char* k : k_keys) {
                known |= key == k;
            }
            if (!known) {
                st.error = std::string(file) + ":" + std::to_string(n) + ": unknown key " + key;
                return st;
            }
            apply(st, key, val);
        }
    }
    for (const char* k : k_keys) {
        if (const char* v = std::getenv(k); v != nullptr && *v != '\0') {
            apply(st, k, v);
        }
    }
    return st;
}

std::string format_ipv4(uint32_t a)
{
    return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
           std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}

} // namespace metaroce::verbs
