#include "app_config.hpp"

#include <nlohmann/json.hpp>

#include "common/strict_json.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <rte_ethdev.h>

#include "dpdk/diagnose.hpp"
#include "dpdk/port.hpp"

namespace metaroce::app {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& origin, const std::string& where, const std::string& what)
{
    throw std::invalid_argument(origin + ": " + where + ": " + what);
}

uint64_t get_uint(const json& j, const std::string& origin, const std::string& where, uint64_t min,
                  uint64_t max)
{
    if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0)) {
        bad(origin, where, "expected a non-negative integer, got " + j.dump());
    }
    const uint64_t v = j.get<uint64_t>();
    if (v < min || v > max) {
        bad(origin, where, std::to_string(v) + " is out of range [" + std::to_string(min) + ", " +
                               std::to_string(max) + "]");
    }
    return v;
}

uint32_t get_ipv4(const json& j, const std::string& origin, const std::string& where)
{
    uint32_t a = 0;
    if (!j.is_string() || !dpdk::parse_ipv4(j.get<std::string>(), a)) {
        bad(origin, where, "expected an IPv4 address string like \"10.0.0.1\", got " + j.dump());
    }
    return a;
}

void check_keys(const json& obj, const std::string& origin, const std::string& where,
                std::initializer_list<const char*> allowed)
{
    if (!obj.is_object()) {
        bad(origin, where, "expected an object, got " + obj.dump());
    }
    for (const auto& [k, v] : obj.items()) {
        bool ok = false;
        std::string list;
        for (const char* a : allowed) {
            ok |= k == a;
            list += std::string(list.empty() ? "" : ", ") + a;
        }
        if (!ok) {
            bad(origin, where, "unknown key \"" + k + "\" (known: " + list + ")");
        }
    }
}

// The port just added to `ports` must not serve another plane already: one port
// configured twice fails deep in DPDK ("Port 0 must be stopped to allow configuration").
void check_unique_port(const std::vector<uint16_t>& ports, const std::string& origin, const std::string& where)
{
    for (size_t j = 0; j + 1 < ports.size(); ++j) {
        if (ports[j] == ports.back()) {
            bad(origin, where, "port " + std::to_string(ports.back()) + " is already plane " + std::to_string(j) +
                                   "'s (ports[" + std::to_string(j) +
                                   "]); each plane needs a port of its own (one --vdev or -a each)");
        }
    }
}

} // namespace

app_config parse_config(const std::string& text, const std::string& origin)
{
    json j;
    try {
        j = common::parse_strict_json(text);
    } catch (const json::parse_error& e) {
        throw std::invalid_argument(origin + ": not valid JSON: " + e.what());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(origin + ": " + e.what());
    }
    app_config c;
    check_keys(j, origin, "top level",
               {"address", "ports", "peers", "lcores", "transport", "mbufs", "max_connections", "record_chunks",
                "udp_checksum_software", "engine", "backend", "udp_port", "inbound_capacity_mbps",
                "tx_copy"});
    if (j.contains("backend")) {
        const json& b = j["backend"];
        if (b != "dpdk" && b != "udp") {
            bad(origin, "backend", "expected \"dpdk\" or \"udp\", got " + b.dump());
        }
        c.udp = b == "udp";
    }
    if (j.contains("udp_port")) {
        c.udp_port = uint16_t(get_uint(j["udp_port"], origin, "udp_port", 1, 65535));
    }
    if (j.contains("address")) {
        c.address = get_ipv4(j["address"], origin, "address");
    }
    if (j.contains("ports")) {
        const json& p = j["ports"];
        if (!p.is_array() || p.empty() || p.size() > dpdk::k_max_planes) {
            bad(origin, "ports", "expected an array of 1.." + std::to_string(dpdk::k_max_planes) +
                                     " port ids (one per plane)");
        }
        c.ports.clear();
        c.gateways.clear();
        for (size_t i = 0; i < p.size(); ++i) {
            // A port id, or {"port": id, "gateway": "mac"} on a routed plane.
            const std::string w = "ports[" + std::to_string(i) + "]";
            if (!p[i].is_object()) {
                c.ports.push_back(uint16_t(get_uint(p[i], origin, w, 0, 1023)));
                check_unique_port(c.ports, origin, w);
                c.gateways.emplace_back();
                continue;
            }
            check_keys(p[i], origin, w, {"port", "gateway"});
            if (!p[i].contains("port")) {
                bad(origin, w, "needs \"port\" (and optionally \"gateway\")");
            }
            c.ports.push_back(uint16_t(get_uint(p[i]["port"], origin, w + ".port", 0, 1023)));
            check_unique_port(c.ports, origin, w + ".port");
            std::optional<dpdk::mac_addr> gw;
            if (p[i].contains("gateway")) {
                dpdk::mac_addr m{};
                const json& g = p[i]["gateway"];
                if (!g.is_string() || !dpdk::parse_mac(g.get<std::string>(), m)) {
                    bad(origin, w + ".gateway", "expected a MAC \"aa:bb:cc:dd:ee:ff\", got " + g.dump());
                }
                if (m.is_zero() || (m.bytes[0] & 1) != 0) {
                    bad(origin, w + ".gateway",
                        "expected a unicast MAC (not zero, broadcast or multicast), got " + g.dump());
                }
                gw = m;
            }
            c.gateways.push_back(gw);
        }
    }
    if (j.contains("lcores")) {
        const json& l = j["lcores"];
        if (!l.is_array()) {
            bad(origin, "lcores", "expected an array of lcore ids");
        }
        for (size_t i = 0; i < l.size(); ++i) {
            c.lcores.push_back(unsigned(get_uint(l[i], origin, "lcores[" + std::to_string(i) + "]", 0, 1023)));
        }
    }
    if (j.contains("peers")) {
        const json& p = j["peers"];
        if (!p.is_array()) {
            bad(origin, "peers", "expected an array of {\"address\", \"plane\", \"mac\"}");
        }
        for (size_t i = 0; i < p.size(); ++i) {
            const std::string w = "peers[" + std::to_string(i) + "]";
            check_keys(p[i], origin, w, {"address", "plane", "mac"});
            dpdk::static_neighbor n;
            if (!p[i].contains("address") || !p[i].contains("mac")) {
                bad(origin, w, "needs \"address\" and \"mac\"");
            }
            n.node = get_ipv4(p[i]["address"], origin, w + ".address");
            n.plane = uint8_t(p[i].contains("plane") ? get_uint(p[i]["plane"], origin, w + ".plane", 0,
                                                               dpdk::k_max_planes - 1)
                                                     : 0);
            if (!p[i]["mac"].is_string() || !dpdk::parse_mac(p[i]["mac"].get<std::string>(), n.mac)) {
                bad(origin, w + ".mac", "expected \"aa:bb:cc:dd:ee:ff\", got " + p[i]["mac"].dump());
            }
            c.peers.push_back(n);
        }
    }
    if (j.contains("transport")) {
        const json& t = j["transport"];
        check_keys(t, origin, "transport",
                   {"mtu", "paths", "max_msgs", "ack_every_bytes", "initial_rtt_us", "min_rto_us",
                    "max_rto_us", "max_timeouts", "connect_retries", "connect_retry_us", "hello_copies"});
        if (t.contains("mtu")) {
            c.transport.mtu = uint16_t(get_uint(t["mtu"], origin, "transport.mtu", 256, 9000));
        }
        if (t.contains("paths")) {
            c.transport.paths = uint16_t(get_uint(t["paths"], origin, "transport.paths", 1, 256));
        }
        if (t.contains("max_msgs")) {
            c.transport.max_msgs = uint16_t(get_uint(t["max_msgs"], origin, "transport.max_msgs", 1, 4096));
        }
        if (t.contains("ack_every_bytes")) {
            c.transport.ack_every_bytes =
                uint32_t(get_uint(t["ack_every_bytes"], origin, "transport.ack_every_bytes", 1, 1u << 30));
        }
        if (t.contains("initial_rtt_us")) {
            c.transport.initial_rtt_ns =
                get_uint(t["initial_rtt_us"], origin, "transport.initial_rtt_us", 1, 1'000'000) * 1000;
        }
        if (t.contains("max_timeouts")) {
            c.transport.max_timeouts =
                uint32_t(get_uint(t["max_timeouts"], origin, "transport.max_timeouts", 1, 1000));
        }
        // How long "connect" tries a silent peer: retries, the first after
        // connect_retry_us, each wait doubling up to 64x.
        if (t.contains("connect_retries")) {
            c.transport.connect_retries =
                uint32_t(get_uint(t["connect_retries"], origin, "transport.connect_retries", 1, 10000));
        }
        if (t.contains("hello_copies")) {
            c.transport.hello_copies = uint32_t(get_uint(t["hello_copies"], origin, "transport.hello_copies", 1, 4));
        }
        if (t.contains("connect_retry_us")) {
            c.transport.connect_retry_ns =
                get_uint(t["connect_retry_us"], origin, "transport.connect_retry_us", 1, 1'000'000) * 1000;
        }
        if (t.contains("min_rto_us")) {
            c.transport.min_rto_ns = get_uint(t["min_rto_us"], origin, "transport.min_rto_us", 1, 1'000'000) * 1000;
        }
        if (t.contains("max_rto_us")) {
            c.transport.max_rto_ns = get_uint(t["max_rto_us"], origin, "transport.max_rto_us", 1, 10'000'000) * 1000;
        }
        if (c.transport.max_rto_ns < c.transport.min_rto_ns) {
            bad(origin, "transport.max_rto_us", "must be at least transport.min_rto_us (" +
                                                    std::to_string(c.transport.min_rto_ns / 1000) + " us)");
        }
    }
    if (j.contains("engine")) {
        const json& e = j["engine"];
        check_keys(e, origin, "engine", {"message_size", "tx_depth"});
        if (e.contains("message_size")) {
            c.message_size = get_uint(e["message_size"], origin, "engine.message_size", 1, 1u << 23);
        }
        if (e.contains("tx_depth")) {
            c.tx_depth = uint32_t(get_uint(e["tx_depth"], origin, "engine.tx_depth", 1, 1024));
        }
    }
    if (j.contains("inbound_capacity_mbps")) {
        // Rate hints' capacity: Mb/s (0: off) or "auto" (the link speed of real ports).
        const json& v = j["inbound_capacity_mbps"];
        if (v != "auto") {
            if (v.is_string()) {
                bad(origin, "inbound_capacity_mbps", "expected Mb/s (0: hints off) or \"auto\"");
            }
            c.inbound_capacity_mbps = get_uint(v, origin, "inbound_capacity_mbps", 0, 100'000'000);
        }
    }
    if (j.contains("mbufs")) {
        c.mbufs = uint32_t(get_uint(j["mbufs"], origin, "mbufs", 1023, 1u << 20));
    }
    if (j.contains("max_connections")) {
        c.max_connections = uint32_t(get_uint(j["max_connections"], origin, "max_connections", 1, 1u << 20));
    }
    if (j.contains("record_chunks")) {
        c.record_chunks = uint32_t(get_uint(j["record_chunks"], origin, "record_chunks", 1, 65535));
    }
    if (j.contains("udp_checksum_software")) {
        if (!j["udp_checksum_software"].is_boolean()) {
            bad(origin, "udp_checksum_software", "expected true or false");
        }
        c.udp_checksum_software = j["udp_checksum_software"].get<bool>();
    }
    if (j.contains("tx_copy")) {
        if (!j["tx_copy"].is_boolean()) {
            bad(origin, "tx_copy", "expected true or false");
        }
        c.tx_copy = j["tx_copy"].get<bool>();
    }
    c.transport.planes = uint8_t(c.ports.size());
    endpoint_config core;
    core.transport = c.transport;
    core.max_connections = c.max_connections;
    core.record_chunks = c.record_chunks;
    if (const std::string why = validate(core); !why.empty()) {
        // The core's names are in ns where the file's keys are in us.
        throw std::invalid_argument(origin + ": transport: not usable by the core: " + why);
    }
    return c;
}

app_config load_config(const std::string& path)
{
    std::ifstream f(path);
    if (!f) {
        throw std::invalid_argument(path + ": cannot open");
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return parse_config(ss.str(), path);
}

void check_ports(const app_config& c, const std::string& origin)
{
    for (size_t i = 0; i < c.ports.size(); ++i) {
        if (rte_eth_dev_is_valid_port(c.ports[i])) {
            continue;
        }
        const std::string where = "ports[" + std::to_string(i) + "]";
        const std::string port = "port " + std::to_string(c.ports[i]) + " does not exist";
        if (const std::string lost = dpdk::explain_missing_devices(); !lost.empty()) {
            bad(origin, where, port + ": " + lost);
        }
        const std::string have = dpdk::unused_ports({});
        bad(origin, where, port + "; the EAL has " + (have.empty() ? "no ports" : "port(s) " + have) +
                               " (add a --vdev or -a for each plane)");
    }
}

void check_udp(const app_config& c, const std::string& origin)
{
    for (size_t i = 0; i < c.gateways.size(); ++i) {
        if (c.gateways[i]) {
            bad(origin, "ports[" + std::to_string(i) + "].gateway",
                "needs the dpdk backend (on udp the kernel routes; drop it or use --backend dpdk)");
        }
    }
    if (!c.peers.empty()) {
        bad(origin, "peers", "static MACs need the dpdk backend (on udp the kernel resolves; drop them)");
    }
}

} // namespace metaroce::app
