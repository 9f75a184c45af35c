// Issue 4 in miniature: the RoCEv2 model moves verified data and loses to metaroce
// under loss; allreduce_ring, many connections and 8 planes work; the derived
// metrics (Jain, timeline, victim, recovery) mean what doc/model.md says.
#include <catch2/catch.hpp>

#include <numeric>

#include "small_scenario.hpp"
#include "sim/simulator.hpp"

using namespace metaroce;
using namespace metaroce::sim;

namespace {

sim_result run(const scenario& s)
{
    simulator sim(s);
    return sim.run();
}

scenario rocev2(scenario s)
{
    s.protocol.kind = protocol_kind::rocev2_model;
    validate(s);
    return s;
}

void check_verified(const sim_result& r)
{
    CHECK(r.stop_reason == "done");
    CHECK(r.data_verified);
    CHECK(r.connection_errors() == 0);
    CHECK(r.work.messages_verified == r.work.messages_total);
}

} // namespace

TEST_CASE("the RoCEv2 model moves verified data at 0 % and 1 % loss", "[rocev2]")
{
    for (const double rate : {0.0, 0.01}) {
        for (uint64_t seed : {1, 2, 3}) {
            scenario s = rocev2(test::small_scenario(wr_opcode::write,
                                                     rate > 0 ? loss_kind::iid : loss_kind::none, rate));
            s.seed = seed;
            const sim_result r = run(s);
            INFO("rate " << rate << " seed " << seed << ": " << to_json(r).dump());
            check_verified(r);
            CHECK(r.protocol == "rocev2_model");
            CHECK(to_json(r)["protocol"] == "rocev2_model");
            CHECK(r.goodput_gbps <= r.loss_free_bound_gbps * 1.001);
            if (rate > 0) {
                CHECK(r.hosts.retransmits > 0);
                CHECK(r.hosts.tx_naks > 0); // go-back-N is driven by NAKs
            }
        }
    }
}

TEST_CASE("the RoCEv2 model refuses what it does not model", "[rocev2]")
{
    scenario s = test::small_scenario(wr_opcode::send);
    s.protocol.kind = protocol_kind::rocev2_model;
    CHECK_THROWS_WITH(validate(s), Catch::Contains("workload.op"));
}

TEST_CASE("at 1 % loss metaroce clearly beats the RoCEv2 model", "[rocev2]")
{
    scenario s = test::small_scenario(wr_opcode::write, loss_kind::iid, 0.01);
    s.workload.messages = 64;
    const sim_result m = run(s);
    const sim_result r = run(rocev2(s));
    INFO("metaroce " << m.goodput_gbps << " Gb/s, RoCEv2 model " << r.goodput_gbps << " Gb/s");
    check_verified(m);
    check_verified(r);
    CHECK(m.goodput_gbps > 1.5 * r.goodput_gbps);
}

TEST_CASE("allreduce_ring completes in 2(N-1) verified steps per host", "[collective]")
{
    for (const auto kind : {protocol_kind::metaroce, protocol_kind::rocev2_model}) {
        scenario s = test::small_scenario();
        s.protocol.kind = kind;
        s.workload.pattern = pattern_kind::allreduce_ring;
        s.workload.senders = 6;
        s.workload.streams = 1;
        s.workload.message_bytes = 6 * 65536;
        s.workload.outstanding = 1;
        validate(s);
        const sim_result r = run(s);
        INFO(to_json(r).dump());
        check_verified(r);
        CHECK(r.work.messages_total == 6 * 2 * 5);
        CHECK(r.work.payload_bytes == 6 * 2 * 5 * 65536ull);
        CHECK(r.completion_time_us > 0);
    }
}

TEST_CASE("identical flows have a Jain index of about 1", "[metrics]")
{
    scenario s = test::small_scenario();
    s.topology.hosts_per_leaf = 8; // one leaf: no ECMP collisions between the flows
    s.workload.messages = 48;
    const sim_result r = run(s);
    check_verified(r);
    REQUIRE(r.jain_index);
    CHECK(*r.jain_index > 0.98);
    CHECK(*r.jain_index <= 1.0 + 1e-12);
}

TEST_CASE("the goodput timeline sums to the bytes delivered", "[metrics]")
{
    for (const auto kind : {protocol_kind::metaroce, protocol_kind::rocev2_model}) {
        scenario s = test::small_scenario(wr_opcode::write, loss_kind::iid, 0.01);
        s.protocol.kind = kind;
        s.timeline_ns = 5'000;
        const sim_result r = run(s);
        check_verified(r);
        const uint64_t sum =
            std::accumulate(r.timeline.bytes.begin(), r.timeline.bytes.end(), uint64_t(0));
        CHECK(sum == r.placed_bytes);
        CHECK(sum == r.work.payload_bytes); // WRITE, every message completed once
        uint64_t planes = 0;
        for (const auto& p : r.timeline.plane_bytes) {
            planes += std::accumulate(p.begin(), p.end(), uint64_t(0));
        }
        CHECK(planes == sum);
        CHECK(r.timeline.interval_us == Approx(5.0));
    }
}

TEST_CASE("4,000 connections over 8 planes complete (scaled down)", "[scale]")
{
    scenario s = test::small_scenario();
    s.topology.hosts = 16;
    s.topology.planes = 8;
    s.transport.planes = 8;
    s.transport.paths = 4;
    s.transport.max_streams = 1;
    s.transport.max_msgs = 2;
    s.transport.rq_depth = 2;
    s.workload.senders = 16;
    s.workload.streams = 1;
    s.workload.connections = 4000;
    s.workload.message_bytes = 8192;
    s.workload.messages = 1;
    s.workload.outstanding = 1;
    validate(s);
    const sim_result r = run(s);
    check_verified(r);
    CHECK(r.connections == 4000);
    CHECK(r.state_bytes_per_connection > 0);
}

TEST_CASE("8 planes carry traffic on every plane", "[planes]")
{
    scenario s = test::small_scenario();
    s.topology.planes = 8;
    s.transport.planes = 8;
    s.transport.paths = 16;
    validate(s);
    const sim_result r = run(s);
    check_verified(r);
    for (const auto& p : r.timeline.plane_bytes) {
        CHECK(std::accumulate(p.begin(), p.end(), uint64_t(0)) > 0);
    }
}

TEST_CASE("incast reports Jain, queues and a victim; a plane failure reports recovery", "[metrics]")
{
    scenario s = test::small_scenario();
    s.topology.hosts = 8;
    s.workload.pattern = pattern_kind::incast;
    s.workload.senders = 4;
    s.workload.victim = true;
    s.timeline_ns = 2'000;
    validate(s);
    const sim_result r = run(s);
    check_verified(r);
    REQUIRE(r.victim);
    CHECK(r.victim->gbps > 0);
    CHECK(r.victim->verified == r.victim->completed);
    CHECK(r.jain_index);
    CHECK(r.queue.peak_last_hop_bytes > 0);
    CHECK(r.queue.bdp_bytes > 0);
    CHECK(r.convergence_window_rtts > 0);

    scenario f = test::small_scenario();
    f.workload.messages = 96;
    f.events.push_back(fault_event{30'000, fault_action::fail_plane, 1, {}, {}, {}});
    validate(f);
    const sim_result fr = run(f);
    check_verified(fr);
    REQUIRE(fr.recovery);
    CHECK(fr.recovery->before_gbps > 0);
    CHECK(fr.recovery->target_gbps == Approx(fr.recovery->before_gbps / 2));
}

TEST_CASE("a READ incast shares the reader fairly: host 0 reads from 256 hosts at once", "[metrics][read]")
{
    // The headline incast's fabric (8 hosts per leaf, 2 planes), the data flowing the
    // other way round: host 0 initiates every connection and reads (spec 6.4, READ).
    scenario s = test::small_scenario(wr_opcode::read);
    s.topology.hosts = 264;
    s.topology.hosts_per_leaf = 8;
    s.topology.spines_per_plane = 4;
    s.transport.paths = 16;
    s.workload.pattern = pattern_kind::incast;
    s.workload.senders = 256;
    s.workload.message_bytes = 524288;
    s.workload.messages = 1;
    s.workload.outstanding = 1;
    s.workload.streams = 1;
    s.workload.victim = true;
    s.timeline_ns = 2'000;
    validate(s);
    const sim_result r = run(s);
    INFO(to_json(r).dump());
    check_verified(r);
    REQUIRE(r.victim);
    CHECK(r.victim->verified == r.victim->completed);
    // 256 data sources, one sink: the bound is host 0's two ports.
    CHECK(r.loss_free_bound_gbps < 200);
    CHECK(r.goodput_gbps > 0.9 * r.loss_free_bound_gbps);
    REQUIRE(r.jain_index);
    CHECK(*r.jain_index >= 0.95);
    // (Convergence at 256:1 moves with the seed's pacing phases: the experiments report
    // it, doc/results/README.md section 2.)
    // The responders' first responses all queue at host 0 together, and so do the ACKs
    // of its READ_REQs: the reader's share in its READ_REQs keeps every timer quiet.
    CHECK(r.hosts.tail_probes == 0);
    CHECK(r.hosts.spurious_retx == 0);
    CHECK(r.hosts.timeouts == 0);
    CHECK(r.net.drops() == 0);
}
