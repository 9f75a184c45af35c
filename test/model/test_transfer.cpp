// End to end through the real core: every operation must move every byte intact
// under loss, bursty loss and a plane failure, with no connection errors.
#include <catch2/catch.hpp>

#include "small_scenario.hpp"
#include "sim/simulator.hpp"

using namespace metaroce;
using namespace metaroce::sim;

namespace {

struct condition {
    const char* name;
    loss_kind loss;
    double rate;
    enum class fault : uint8_t { none, plane, spine } fail;
};

void check_transfer(wr_opcode op, const condition& c, uint64_t seed)
{
    scenario s = test::small_scenario(op, c.loss, c.rate);
    s.seed = seed;
    if (c.fail == condition::fault::plane) {
        // Mid-transfer: the lossless run takes roughly 60 us.
        s.events.push_back(fault_event{20'000, fault_action::fail_plane, 1, {}, {}, {}});
    }
    if (c.fail == condition::fault::spine) {
        s.events.push_back(fault_event{20'000, fault_action::fail_switch, 0, {}, 1, {}});
    }
    validate(s);
    simulator sim(s);
    const sim_result r = sim.run();
    INFO("op " << op_name(op) << ", " << c.name << ", seed " << seed << ": " << to_json(r).dump());
    CHECK(r.stop_reason == "done");
    CHECK(r.completed);
    CHECK(r.data_verified);
    CHECK(r.connection_errors() == 0);
    CHECK(r.work.messages_verified == r.work.messages_total);
    CHECK(r.work.payload_bytes == s.workload.message_bytes * r.work.messages_total);
    CHECK(r.goodput_gbps > 0);
    CHECK(r.goodput_gbps <= r.loss_free_bound_gbps * 1.001);
    if (c.rate > 0) {
        CHECK(r.net.loss_drops > 0);
        CHECK(r.hosts.retransmits > 0);
    } else {
        CHECK(r.net.loss_drops == 0);
    }
    if (c.fail != condition::fault::none) {
        CHECK(r.net.failure_drops > 0);
    }
    if (op == wr_opcode::send || op == wr_opcode::write_imm) {
        CHECK(r.work.recv_completions > 0);
        CHECK(r.work.recv_mismatches == 0);
    }
}

// Several seeds: each draws other losses, ECMP hashes and initial PSNs.
void check_all_seeds(wr_opcode op, const condition& c)
{
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        check_transfer(op, c, seed);
    }
}

const condition k_conditions[] = {
    {"no loss", loss_kind::none, 0, condition::fault::none},
    {"1% iid loss", loss_kind::iid, 0.01, condition::fault::none},
    {"10% iid loss", loss_kind::iid, 0.10, condition::fault::none},
    {"2% gilbert loss", loss_kind::gilbert, 0.02, condition::fault::none},
    {"plane 1 fails", loss_kind::none, 0, condition::fault::plane},
    {"spine 1 of plane 0 fails", loss_kind::none, 0, condition::fault::spine},
};

} // namespace

TEST_CASE("write completes and verifies under every fault condition", "[transfer]")
{
    for (const auto& c : k_conditions) {
        check_all_seeds(wr_opcode::write, c);
    }
}

TEST_CASE("send completes and verifies under every fault condition", "[transfer]")
{
    for (const auto& c : k_conditions) {
        check_all_seeds(wr_opcode::send, c);
    }
}

TEST_CASE("read completes and verifies under every fault condition", "[transfer]")
{
    for (const auto& c : k_conditions) {
        check_all_seeds(wr_opcode::read, c);
    }
}

TEST_CASE("write_imm completes and verifies under every fault condition", "[transfer]")
{
    for (const auto& c : k_conditions) {
        check_all_seeds(wr_opcode::write_imm, c);
    }
}

TEST_CASE("incast and all-to-all complete", "[transfer]")
{
    scenario s = test::small_scenario();
    SECTION("incast")
    {
        s.workload.pattern = pattern_kind::incast;
        s.workload.senders = 6;
    }
    SECTION("alltoall")
    {
        s.workload.pattern = pattern_kind::alltoall;
        s.workload.senders = 8;
        s.workload.messages = 4;
    }
    validate(s);
    simulator sim(s);
    const sim_result r = sim.run();
    INFO(to_json(r).dump());
    CHECK(r.completed);
    CHECK(r.data_verified);
    CHECK(r.connection_errors() == 0);
}

TEST_CASE("a duration shorter than the transfer stops the run early", "[transfer]")
{
    scenario s = test::small_scenario();
    s.duration_ns = 10'000;
    simulator sim(s);
    const sim_result r = sim.run();
    CHECK(r.stop_reason == "duration");
    CHECK_FALSE(r.completed);
    CHECK_FALSE(r.data_verified);
    CHECK(r.virtual_time_us == Approx(10.0));
}

TEST_CASE("a fabric dropping exactly every other packet ends, with errors if not complete",
          "[transfer][hostile]")
{
    // Gilbert-Elliott with mean loss 0.5 and mean burst 1 alternates deterministically.
    scenario s = test::small_scenario(wr_opcode::write, loss_kind::gilbert, 0.5);
    s.loss.burst = 1;
    s.workload.messages = 8;
    validate(s);
    simulator sim(s);
    const sim_result r = sim.run();
    INFO(to_json(r).dump());
    CHECK(r.stop_reason == "done"); // not "time_limit": nothing stalls in silence
    // Either everything got through or the failures were reported as errors.
    CHECK((r.work.messages_completed == r.work.messages_total || r.connection_errors() > 0));
    CHECK(r.work.data_mismatches == 0);
}
