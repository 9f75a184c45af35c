#include "sim/scenario_json.hpp"

#include "common/strict_json.hpp"

#include <array>
#include <cmath>
#include <utility>

namespace metaroce::sim {

namespace {

constexpr std::array<std::pair<std::string_view, pattern_kind>, 4> k_patterns{{
    {"pairs", pattern_kind::pairs},
    {"incast", pattern_kind::incast},
    {"alltoall", pattern_kind::alltoall},
    {"allreduce_ring", pattern_kind::allreduce_ring},
}};
constexpr std::array<std::pair<std::string_view, protocol_kind>, 2> k_protocols{{
    {"metaroce", protocol_kind::metaroce},
    {"rocev2_model", protocol_kind::rocev2_model},
}};
constexpr std::array<std::pair<std::string_view, loss_kind>, 3> k_loss_models{{
    {"none", loss_kind::none},
    {"iid", loss_kind::iid},
    {"gilbert", loss_kind::gilbert},
}};
constexpr std::array<std::pair<std::string_view, wr_opcode>, 5> k_ops{{
    {"write", wr_opcode::write},
    {"write_imm", wr_opcode::write_imm},
    {"send", wr_opcode::send},
    {"send_imm", wr_opcode::send_imm},
    {"read", wr_opcode::read},
}};
constexpr std::array<std::pair<std::string_view, fault_action>, 6> k_actions{{
    {"fail_plane", fault_action::fail_plane},
    {"restore_plane", fault_action::restore_plane},
    {"fail_link", fault_action::fail_link},
    {"restore_link", fault_action::restore_link},
    {"fail_switch", fault_action::fail_switch},
    {"restore_switch", fault_action::restore_switch},
}};

template <typename T, size_t N>
T read_enum(const json_reader& r, std::string_view key,
            const std::array<std::pair<std::string_view, T>, N>& names, T fallback)
{
    if (!r.has(key)) {
        return fallback;
    }
    std::string value;
    r.read_string(key, value);
    std::string list;
    for (const auto& [name, v] : names) {
        if (name == value) {
            return v;
        }
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    r.fail(key, "must be one of " + list + ", got \"" + value + "\"");
}

template <typename T, size_t N>
std::string_view enum_name(const std::array<std::pair<std::string_view, T>, N>& names, T v)
{
    for (const auto& [name, value] : names) {
        if (value == v) {
            return name;
        }
    }
    return "?";
}

// Microsecond keys are numbers (fractions allowed) stored as nanoseconds.
void read_us(const json_reader& r, std::string_view key, uint64_t& out_ns, double max_us)
{
    if (!r.has(key)) {
        return;
    }
    double us = 0;
    r.read_double(key, us, 0, max_us);
    out_ns = uint64_t(std::llround(us * 1000));
}

void parse_topology(const json_reader& r, topology_params& t)
{
    r.read_uint("hosts", t.hosts, 2, 65535);
    r.read_uint("planes", t.planes, 1, k_max_planes);
    r.read_uint("spines_per_plane", t.spines_per_plane, 1, 1024);
    r.read_uint("hosts_per_leaf", t.hosts_per_leaf, 1, 65535);
    r.read_double("link_gbps", t.link_gbps, 0.001, 100'000);
    r.read_uint("link_delay_ns", t.link_delay_ns, 0, 1'000'000'000);
    r.read_uint("switch_buffer_bytes", t.switch_buffer_bytes, 1, uint64_t(1) << 40);
    r.read_uint("ecn_threshold_bytes", t.ecn_threshold_bytes, 0, uint64_t(1) << 40);
}

void parse_long_haul(const json_reader& r, long_haul_params& lh)
{
    r.read_uint("site_b_leaf", lh.site_b_leaf, 1, 65535);
    read_us(r, "delay_us", lh.delay_ns, 1e6);
    r.read_double("gbps", lh.gbps, 0.001, 100'000);
    r.read_uint("slow_routes", lh.slow_routes, 0, 1024);
    r.read_double("slow_gbps", lh.slow_gbps, 0.001, 100'000);
}

void parse_transport(const json_reader& r, transport_config& t, protocol_params& p)
{
    p.kind = read_enum(r, "protocol", k_protocols, p.kind);
    r.read_bool("rocev2_spread_planes", p.spread_planes);
    read_us(r, "rocev2_timeout_us", p.rocev2_timeout_ns, 1e8);
    r.read_uint("mtu", t.mtu, 64, 16384);
    r.read_uint("paths_per_connection", t.paths, 1, 256);
    r.read_uint("max_streams", t.max_streams, 1, 65535);
    r.read_uint("max_msgs", t.max_msgs, 1, 65535);
    r.read_uint("rq_depth", t.rq_depth, 1, 65535);
    r.read_uint("ack_every_bytes", t.ack_every_bytes, 1, 1u << 30);
    if (r.has("ack_every_bytes")) {
        p.rocev2_ack_every_bytes = t.ack_every_bytes;
    }
    r.read_uint("ack_delay_ns", t.ack_delay_ns, 0, 1'000'000'000);
    read_us(r, "initial_rtt_us", t.initial_rtt_ns, 1e6);
    read_us(r, "min_rto_us", t.min_rto_ns, 1e7);
    read_us(r, "max_rto_us", t.max_rto_ns, 1e8);
    read_us(r, "connect_retry_us", t.connect_retry_ns, 1e7);
    r.read_uint("hello_copies", t.hello_copies, 1, 4);
    r.read_uint("max_timeouts", t.max_timeouts, 1, 1'000'000);
    r.read_uint("reroute_after", t.reroute_after, 1, 1'000'000);
    r.read_uint("replane_after", t.replane_after, 1, 1'000'000);
    r.read_double("path_cwnd_init", t.cc.path_cwnd_init, 1, 1e6);
    r.read_double("conn_cwnd_init", t.cc.conn_cwnd_init, 1, 1e6);
    r.read_double("conn_cwnd_first", t.cc.conn_cwnd_first, 1, 1e6);
    r.read_double("conn_cwnd_max", t.cc.conn_cwnd_max, 1, 1e6);
}

void parse_loss(const json_reader& r, loss_params& l)
{
    l.model = read_enum(r, "model", k_loss_models, l.model);
    r.read_double("rate", l.rate, 0, 0.999);
    r.read_double("burst", l.burst, 1, 1e6);
}

fault_event parse_event(const nlohmann::json& j, const std::string& path)
{
    const json_reader r(j, path, {"at_us", "action", "plane", "leaf", "spine", "host"});
    fault_event e;
    if (!r.has("at_us")) {
        r.fail("at_us", "is required");
    }
    if (!r.has("action")) {
        r.fail("action", "is required");
    }
    read_us(r, "at_us", e.at_ns, 1e9);
    e.action = read_enum(r, "action", k_actions, e.action);
    if (!r.has("plane")) {
        r.fail("plane", "is required");
    }
    r.read_uint("plane", e.plane, 0, 255);
    const bool is_link = e.action == fault_action::fail_link || e.action == fault_action::restore_link;
    const bool is_switch =
        e.action == fault_action::fail_switch || e.action == fault_action::restore_switch;
    for (std::string_view k : {"leaf", "spine"}) {
        if (r.has(k) && !is_link && !is_switch) {
            r.fail(k, "only applies to fail_link, restore_link, fail_switch and restore_switch");
        }
    }
    if (r.has("host") && !is_link) {
        r.fail("host", "only applies to fail_link and restore_link");
    }
    uint32_t v = 0;
    if (r.has("leaf")) {
        r.read_uint("leaf", v, 0, 65535);
        e.leaf = v;
    }
    if (r.has("spine")) {
        r.read_uint("spine", v, 0, 65535);
        e.spine = v;
    }
    if (r.has("host")) {
        r.read_uint("host", v, 0, 65535);
        e.host = v;
    }
    if (is_link) {
        const bool fabric_link = e.leaf && e.spine && !e.host;
        const bool host_link = e.host && !e.leaf && !e.spine;
        if (!fabric_link && !host_link) {
            throw scenario_error("'" + path + "' names a link by 'leaf' and 'spine', or by 'host'");
        }
    }
    if (is_switch && bool(e.leaf) == bool(e.spine)) {
        throw scenario_error("'" + path + "' names a switch by 'leaf' or by 'spine' (one of them)");
    }
    return e;
}

void parse_faults(const json_reader& r, scenario& s)
{
    if (r.has("loss")) {
        parse_loss(json_reader(r.at("loss"), r.key_path("loss"), {"model", "rate", "burst"}),
                   s.loss);
    }
    if (r.has("events")) {
        const auto& ev = r.at("events");
        if (!ev.is_array()) {
            r.fail("events", "must be an array, got " + std::string(ev.type_name()));
        }
        for (size_t i = 0; i < ev.size(); ++i) {
            s.events.push_back(parse_event(ev[i], r.key_path("events") + "[" + std::to_string(i) + "]"));
        }
    }
}

void parse_workload(const json_reader& r, workload_params& w)
{
    w.pattern = read_enum(r, "pattern", k_patterns, w.pattern);
    w.op = read_enum(r, "op", k_ops, w.op);
    r.read_uint("senders", w.senders, 1, 65535);
    r.read_uint("message_bytes", w.message_bytes, 1, uint64_t(1) << 31);
    r.read_uint("messages", w.messages, 1, uint64_t(1) << 32);
    r.read_uint("streams", w.streams, 1, 65535);
    r.read_uint("outstanding", w.outstanding, 1, 65535);
    r.read_uint("connections", w.connections, 0, 1'000'000);
    r.read_bool("victim", w.victim);
}

[[noreturn]] void invalid(const std::string& key, const std::string& what)
{
    throw scenario_error("'" + key + "' " + what);
}

} // namespace

std::string_view to_string(pattern_kind p) noexcept { return enum_name(k_patterns, p); }
std::string_view to_string(protocol_kind p) noexcept { return enum_name(k_protocols, p); }
std::string_view to_string(loss_kind l) noexcept { return enum_name(k_loss_models, l); }
std::string_view op_name(wr_opcode op) noexcept { return enum_name(k_ops, op); }

scenario parse_scenario(const nlohmann::json& j)
{
    const json_reader r(j, "",
                        {"name", "seed", "duration_us", "topology", "transport", "faults",
                         "workload", "comment", "timeline_us"});
    scenario s;
    r.read_string("name", s.name);
    r.read_uint("seed", s.seed, 0, UINT64_MAX);
    if (r.has("duration_us")) {
        uint64_t ns = 0;
        read_us(r, "duration_us", ns, 1e9);
        s.duration_ns = ns;
    }
    read_us(r, "timeline_us", s.timeline_ns, 1e6);
    if (r.has("topology")) {
        parse_topology(json_reader(r.at("topology"), "topology",
                                   {"hosts", "planes", "spines_per_plane", "hosts_per_leaf",
                                    "link_gbps", "link_delay_ns", "switch_buffer_bytes",
                                    "ecn_threshold_bytes", "long_haul"}),
                       s.topology);
        if (const auto& t = r.at("topology"); t.contains("long_haul")) {
            parse_long_haul(json_reader(t.at("long_haul"), "topology.long_haul",
                                        {"site_b_leaf", "delay_us", "gbps", "slow_routes",
                                         "slow_gbps"}),
                            s.long_haul);
        }
    }
    if (r.has("transport")) {
        parse_transport(json_reader(r.at("transport"), "transport",
                                    {"protocol", "rocev2_spread_planes", "rocev2_timeout_us", "mtu", "paths_per_connection", "max_streams", "max_msgs",
                                     "rq_depth", "ack_every_bytes", "ack_delay_ns",
                                     "initial_rtt_us", "min_rto_us", "max_rto_us", "connect_retry_us", "hello_copies", "max_timeouts",
                                     "reroute_after", "replane_after", "path_cwnd_init",
                                     "conn_cwnd_init", "conn_cwnd_first", "conn_cwnd_max"}),
                        s.transport, s.protocol);
    }
    if (r.has("faults")) {
        parse_faults(json_reader(r.at("faults"), "faults", {"loss", "events"}), s);
    }
    if (r.has("workload")) {
        parse_workload(json_reader(r.at("workload"), "workload",
                                   {"pattern", "senders", "message_bytes", "messages", "op",
                                    "streams", "outstanding", "connections", "victim"}),
                       s.workload);
    }
    s.transport.planes = uint8_t(s.topology.planes);
    validate(s);
    return s;
}

scenario parse_scenario_text(std::string_view text)
{
    nlohmann::json j;
    try {
        j = common::parse_strict_json(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw scenario_error(std::string("invalid JSON: ") + e.what());
    } catch (const std::invalid_argument& e) {
        throw scenario_error(e.what());
    }
    return parse_scenario(j);
}

void validate(const scenario& s)
{
    const auto& t = s.topology;
    const auto& w = s.workload;
    const auto& tr = s.transport;
    endpoint_config core;
    core.transport = tr;
    if (const std::string why = metaroce::validate(core); !why.empty()) {
        // Names are the core's (in ns); the scenario keys are their _us counterparts.
        invalid("transport", "is not usable by the core: " + why);
    }
    if (t.planes != tr.planes) {
        invalid("topology.planes", "disagrees with transport planes (set both from topology)");
    }
    if (t.leaves() > 1 && t.spines_per_plane == 0) {
        invalid("topology.spines_per_plane", "must be at least 1 with more than one leaf");
    }
    if (s.long_haul.enabled() && s.long_haul.site_b_leaf >= t.leaves()) {
        invalid("topology.long_haul.site_b_leaf", "must be below the number of leaves (" +
                                                      std::to_string(t.leaves()) + ")");
    }
    if (s.long_haul.slow_routes > t.spines_per_plane) {
        invalid("topology.long_haul.slow_routes", "must be at most topology.spines_per_plane");
    }
    switch (w.pattern) {
    case pattern_kind::allreduce_ring:
        if (w.senders < 2) {
            invalid("workload.senders", "must be at least 2 for allreduce_ring");
        }
        [[fallthrough]];
    case pattern_kind::pairs:
    case pattern_kind::alltoall:
        if (w.senders > t.hosts) {
            invalid("workload.senders", "must be at most topology.hosts (" +
                                            std::to_string(t.hosts) + ")");
        }
        break;
    case pattern_kind::incast:
        if (w.senders > t.hosts - 1) {
            invalid("workload.senders", "must be at most topology.hosts - 1 for incast (" +
                                            std::to_string(t.hosts - 1) + ")");
        }
        break;
    }
    if (w.streams > tr.max_streams) {
        invalid("workload.streams", "exceeds transport.max_streams (" +
                                        std::to_string(tr.max_streams) + ")");
    }
    if (w.outstanding > tr.max_msgs) {
        invalid("workload.outstanding", "exceeds transport.max_msgs (" +
                                            std::to_string(tr.max_msgs) + ")");
    }
    const bool uses_recv = w.op == wr_opcode::send || w.op == wr_opcode::send_imm ||
                           w.op == wr_opcode::write_imm;
    if (uses_recv && w.outstanding + 1 > uint32_t(tr.rq_depth) * w.streams) {
        invalid("workload.outstanding", "needs outstanding + 1 posted receives, more than "
                                        "transport.rq_depth x workload.streams");
    }
    const uint64_t pairs = w.pattern == pattern_kind::alltoall ? uint64_t(w.senders) * (t.hosts - 1)
                                                               : w.senders;
    if (w.connections != 0 && w.connections < pairs) {
        invalid("workload.connections", "must be 0 (one per pair) or at least the number of "
                                        "sender-receiver pairs (" + std::to_string(pairs) + ")");
    }
    if (w.pattern == pattern_kind::allreduce_ring && w.connections % w.senders != 0) {
        // Each ring is one connection per sender; step k waits for its predecessor's.
        invalid("workload.connections", "must be a multiple of workload.senders (" +
                                            std::to_string(w.senders) + ") for allreduce_ring");
    }
    const uint64_t conns = w.connections == 0 ? pairs : w.connections;
    if (w.victim) {
        if (w.pattern != pattern_kind::incast) {
            invalid("workload.victim", "only applies to the incast pattern");
        }
        if (t.hosts < w.senders + 2 || t.hosts_per_leaf < 2 ||
            (t.hosts - 1) / t.hosts_per_leaf == 0) {
            invalid("workload.victim", "needs host H-1 outside the incast and off the sink's "
                                       "leaf, and host 1 on the sink's leaf");
        }
    }
    if (s.protocol.kind == protocol_kind::rocev2_model && w.op != wr_opcode::write) {
        invalid("workload.op", "must be write with transport.protocol rocev2_model (the model "
                               "only has RDMA WRITE)");
    }
    if (s.timeline_ns == 0) {
        invalid("timeline_us", "must be above 0");
    }
    // Two rings of outstanding+1 messages per connection live in this process.
    const double ring_bytes = double(conns) * 2 * (w.outstanding + 1) * double(w.message_bytes);
    if (ring_bytes > 8.0 * (1ull << 30)) {
        invalid("workload.message_bytes", "with this many connections and outstanding messages "
                                          "needs more than 8 GiB of buffers");
    }
    if (s.loss.model == loss_kind::gilbert && s.loss.rate > 0 &&
        s.loss.rate / (s.loss.burst * (1 - s.loss.rate)) > 1) {
        invalid("faults.loss.burst", "is too short for this rate (need burst >= rate/(1-rate))");
    }
    for (size_t i = 0; i < s.events.size(); ++i) {
        const auto& e = s.events[i];
        const std::string at = "faults.events[" + std::to_string(i) + "]";
        if (e.plane >= t.planes) {
            invalid(at + ".plane", "must be below topology.planes (" + std::to_string(t.planes) + ")");
        }
        if (e.leaf && *e.leaf >= t.leaves()) {
            invalid(at + ".leaf", "must be below the number of leaves (" +
                                      std::to_string(t.leaves()) + ")");
        }
        if (e.spine && t.leaves() == 1) {
            invalid(at + ".spine", "names a spine, but a fabric of one leaf has none (its hosts "
                                   "share the leaf)");
        }
        if (e.spine && *e.spine >= t.spines_per_plane) {
            invalid(at + ".spine", "must be below topology.spines_per_plane (" +
                                       std::to_string(t.spines_per_plane) + ")");
        }
        if (e.host && *e.host >= t.hosts) {
            invalid(at + ".host", "must be below topology.hosts (" + std::to_string(t.hosts) + ")");
        }
    }
}

} // namespace metaroce::sim
