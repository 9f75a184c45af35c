// Scenario files: defaults, and errors that name the offending key.
#include <catch2/catch.hpp>

#include "sim/scenario_json.hpp"

using namespace metaroce;
using namespace metaroce::sim;

namespace {
std::string error_of(const std::string& text)
{
    try {
        parse_scenario_text(text);
    } catch (const scenario_error& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST_CASE("an empty scenario takes every default", "[scenario]")
{
    const scenario s = parse_scenario_text("{}");
    CHECK(s.topology.hosts == 16);
    CHECK(s.topology.planes == 2);
    CHECK(s.transport.planes == 2);
    CHECK(s.transport.mtu == 4096);
    // The RoCEv2 model keeps its own ACK_REQ spacing when the scenario does not set one.
    CHECK(s.transport.ack_every_bytes == transport_config{}.ack_every_bytes);
    CHECK(s.protocol.rocev2_ack_every_bytes == 16384u);
    CHECK(s.loss.model == loss_kind::none);
    CHECK(s.workload.op == wr_opcode::write);
    CHECK_FALSE(s.duration_ns.has_value());
}

TEST_CASE("scenario keys map onto the model and transport", "[scenario]")
{
    const scenario s = parse_scenario_text(R"({
        "name": "x", "seed": 42, "duration_us": 1.5,
        "topology": {"hosts": 8, "planes": 4, "link_gbps": 400, "hosts_per_leaf": 2},
        "transport": {"mtu": 1024, "paths_per_connection": 32, "min_rto_us": 50, "ack_every_bytes": 8192},
        "faults": {"loss": {"model": "gilbert", "rate": 0.01, "burst": 3},
                   "events": [{"at_us": 10, "action": "fail_link", "plane": 3, "leaf": 1, "spine": 0},
                              {"at_us": 20, "action": "restore_plane", "plane": 2}]},
        "workload": {"pattern": "incast", "senders": 7, "op": "read", "streams": 3}
    })");
    CHECK(s.name == "x");
    CHECK(s.seed == 42);
    CHECK(s.duration_ns == 1500u);
    CHECK(s.topology.leaves() == 4);
    CHECK(s.transport.planes == 4);
    CHECK(s.transport.paths == 32);
    CHECK(s.transport.min_rto_ns == 50'000u);
    CHECK(s.transport.ack_every_bytes == 8192u);
    CHECK(s.protocol.rocev2_ack_every_bytes == 8192u); // the key sets both protocols'
    CHECK(s.loss.model == loss_kind::gilbert);
    REQUIRE(s.events.size() == 2);
    CHECK(s.events[0].at_ns == 10'000u);
    CHECK(s.events[0].action == fault_action::fail_link);
    CHECK(*s.events[0].leaf == 1);
    CHECK(s.events[1].action == fault_action::restore_plane);
    CHECK(s.workload.pattern == pattern_kind::incast);
    CHECK(s.workload.op == wr_opcode::read);
}

TEST_CASE("scenario errors name the key", "[scenario]")
{
    using Catch::Matchers::Contains;
    CHECK_THAT(error_of(R"({"topology": {"hosts": 8, "spine": 2}})"),
               Contains("unknown key 'topology.spine'"));
    CHECK_THAT(error_of(R"({"workloads": {}})"), Contains("unknown key 'workloads'"));
    CHECK_THAT(error_of(R"({"topology": {"hosts": "8"}})"),
               Contains("'topology.hosts' must be a non-negative integer, got string"));
    CHECK_THAT(error_of(R"({"topology": {"hosts": 2.5}})"), Contains("'topology.hosts'"));
    CHECK_THAT(error_of(R"({"topology": {"hosts": 1}})"),
               Contains("'topology.hosts' must be in [2, 65535], got 1"));
    CHECK_THAT(error_of(R"({"faults": {"loss": {"model": "bursty"}}})"),
               Contains("'faults.loss.model' must be one of none, iid, gilbert"));
    CHECK_THAT(error_of(R"({"faults": {"loss": {"rate": "high"}}})"),
               Contains("'faults.loss.rate' must be a number"));
    CHECK_THAT(error_of(R"({"workload": {"op": "atomic"}})"), Contains("'workload.op'"));
    CHECK_THAT(error_of(R"({"workload": {"senders": 16, "pattern": "incast"}})"),
               Contains("'workload.senders'"));
    CHECK_THAT(error_of(R"({"faults": {"events": [{"at_us": 1, "action": "fail_plane"}]}})"),
               Contains("'faults.events[0].plane' is required"));
    CHECK_THAT(error_of(R"({"faults": {"events": [{"at_us": 1, "action": "fail_plane", "plane": 2}]}})"),
               Contains("'faults.events[0].plane' must be below topology.planes"));
    CHECK_THAT(error_of(R"({"faults": {"events": [{"at_us": 1, "action": "fail_link", "plane": 0, "leaf": 0}]}})"),
               Contains("'faults.events[0]' names a link"));
    CHECK_THAT(error_of(R"({"faults": {"events": [{"at_us": 1, "action": "fail_link", "plane": 0, "leaf": 9, "spine": 0}]}})"),
               Contains("'faults.events[0].leaf' must be below the number of leaves"));
    CHECK_THAT(error_of(R"({"faults": {"events": [{"at_us": 1, "action": "fail_switch", "plane": 0, "leaf": 0, "spine": 1}]}})"),
               Contains("'faults.events[0]' names a switch by 'leaf' or by 'spine'"));
    CHECK_THAT(error_of(R"({"faults": {"events": [{"at_us": 1, "action": "fail_switch", "plane": 0, "host": 1}]}})"),
               Contains("'faults.events[0].host' only applies to fail_link and restore_link"));
    // One leaf: no spines, whatever spines_per_plane says (failing one read past the links).
    CHECK_THAT(error_of(R"({"topology": {"hosts": 3, "hosts_per_leaf": 16}, "faults": {"events": [{"at_us": 1, "action": "fail_switch", "plane": 0, "spine": 0}]}})"),
               Contains("'faults.events[0].spine' names a spine, but a fabric of one leaf has none"));
    CHECK_THAT(error_of(R"({"topology": {"hosts": 4, "hosts_per_leaf": 4}, "faults": {"events": [{"at_us": 1, "action": "fail_link", "plane": 0, "leaf": 0, "spine": 1}]}})"),
               Contains("'faults.events[0].spine' names a spine"));
    // A ring is one connection per sender (its predecessor must exist).
    CHECK_THAT(error_of(R"({"workload": {"pattern": "allreduce_ring", "senders": 2, "connections": 7}})"),
               Contains("'workload.connections' must be a multiple of workload.senders (2) for allreduce_ring"));
    CHECK(error_of(R"({"workload": {"pattern": "allreduce_ring", "senders": 2, "connections": 8}})") == "");
    CHECK_THAT(error_of(R"({"faults": {"events": {}}})"), Contains("'faults.events' must be an array"));
    CHECK_THAT(error_of(R"({"topology": [1]})"), Contains("'topology' must be an object"));
    CHECK_THAT(error_of("{"), Contains("invalid JSON"));
}

TEST_CASE("a key given twice is an error, not a silent override", "[scenario]")
{
    CHECK(error_of(R"({"transport": {"max_rto_us": 1000, "max_rto_us": 0}})") ==
          "duplicate key 'max_rto_us' in 'transport'");
    CHECK(error_of(R"({"seed": 1, "seed": 2})") == "duplicate key 'seed' in the top level");
    CHECK(error_of(R"({"faults": {"events": [{"at_us": 1, "at_us": 2, "action": "fail_plane"}]}})")
              .find("duplicate key 'at_us'") != std::string::npos);
    // The same key in sibling objects is fine.
    CHECK(error_of(R"({"topology": {"planes": 2}, "transport": {"mtu": 4096}, "workload": {"senders": 2}})") == "");
}

TEST_CASE("timer settings the core cannot run with are refused", "[scenario]")
{
    const std::string e = error_of(R"({"transport": {"max_rto_us": 0}})");
    CHECK(e.find("'transport'") != std::string::npos);
    CHECK(e.find("max_rto_ns") != std::string::npos);
    CHECK(error_of(R"({"transport": {"min_rto_us": 500, "max_rto_us": 100}})").find("max_rto_ns") !=
          std::string::npos);
}
