// The fabric on its own, with packets injected by hand: ECMP, ECN marking, tail
// drop, failures and the loss models, checked against independent arithmetic.
#include <catch2/catch.hpp>

#include <map>

#include "small_scenario.hpp"
#include "sim/fabric.hpp"
#include "sim/loss_model.hpp"
#include "sim/wire_size.hpp"

using namespace metaroce;
using namespace metaroce::sim;

namespace {

constexpr uint32_t k_len = 4096 + 60;

// A fabric with its queue and pool, and a loop that runs it to quiescence.
struct bench {
    scenario s;
    event_queue q;
    packet_pool pool{8192, 1024};
    fabric net;
    std::vector<packet_meta> delivered;

    explicit bench(scenario sc) : s(std::move(sc)), net(s, q, pool) {}

    void inject(uint32_t src, uint32_t dst, uint8_t plane, uint16_t sport, sim_time at = 0,
                bool ect = true)
    {
        const uint32_t p = pool.alloc();
        pool.meta(p) = packet_meta{src, dst, k_len, wire_bytes(k_len), sport, plane, ect, false};
        net.transmit(p, at);
    }

    void run()
    {
        while (!q.empty()) {
            const event e = q.pop();
            if (e.kind == event_kind::arrival &&
                net.on_arrival(e.a, e.b, e.time) == hop_result::delivered) {
                delivered.push_back(pool.meta(e.a));
                pool.free(e.a);
            }
        }
    }
};

scenario fabric_scenario()
{
    scenario s = test::small_scenario();
    s.topology.spines_per_plane = 4;
    return s;
}

} // namespace

TEST_CASE("ECMP spreads source ports over every spine and keeps each flow on one", "[fabric]")
{
    bench b(fabric_scenario());
    const auto& t = b.net.topo();
    REQUIRE(t.leaf_of(0) != t.leaf_of(5));
    std::map<uint32_t, int> per_spine;
    for (uint16_t i = 0; i < 256; ++i) {
        const uint16_t sport = uint16_t(49152 + i);
        const uint32_t spine = t.ecmp_spine(0, t.leaf_of(0), 0, 5, sport);
        REQUIRE(spine < 4);
        CHECK(t.ecmp_spine(0, t.leaf_of(0), 0, 5, sport) == spine);
        ++per_spine[spine];
        b.inject(0, 5, 0, sport, sim_time(i) * 1'000'000);
    }
    b.run();
    REQUIRE(per_spine.size() == 4);
    for (const auto& [spine, n] : per_spine) {
        INFO("spine " << spine);
        CHECK(n > 40);  // 64 expected per spine
        CHECK(n < 90);
        // The packets really crossed the spine the hash named.
        CHECK(t.at(t.leaf_up(0, t.leaf_of(0), spine)).stats.tx_packets == uint64_t(n));
    }
    CHECK(b.delivered.size() == 256);
    CHECK(b.net.stats().drops() == 0);
}

TEST_CASE("the ECMP hash depends on the seed and the plane", "[fabric]")
{
    scenario s1 = fabric_scenario();
    scenario s2 = s1;
    s2.seed = s1.seed + 1;
    const topology a(s1.topology, s1.seed);
    const topology b(s2.topology, s2.seed);
    int same_seed = 0;
    int same_plane = 0;
    for (uint16_t i = 0; i < 256; ++i) {
        const uint16_t sport = uint16_t(49152 + i);
        same_seed += a.ecmp_spine(0, 0, 0, 5, sport) == b.ecmp_spine(0, 0, 0, 5, sport);
        same_plane += a.ecmp_spine(0, 0, 0, 5, sport) == a.ecmp_spine(1, 0, 0, 5, sport);
    }
    CHECK(same_seed < 120); // about 64 agree by chance
    CHECK(same_plane < 120);
}

TEST_CASE("ECN marks exactly the packets that find the queue above the threshold", "[fabric]")
{
    // Hosts 0 and 1 each send N back-to-back packets to host 2 on the same leaf: the
    // leaf's port to host 2 receives two packets per packet time and drains one, so
    // the k-th pair finds k and then k+1 packets queued.
    scenario s = fabric_scenario();
    const uint64_t w = wire_bytes(k_len);
    s.topology.ecn_threshold_bytes = w * 21 / 2; // 10.5 packets
    s.topology.switch_buffer_bytes = 1u << 30;
    bench b(s);
    const int n = 40;
    for (int k = 0; k < n; ++k) {
        b.inject(0, 2, 0, 50000);
        b.inject(1, 2, 0, 50001);
    }
    b.run();
    // k*w > 10.5w for k >= 11, (k+1)*w > 10.5w for k >= 10.
    const uint64_t expected = (n - 11) + (n - 10);
    const auto& port = b.net.topo().at(b.net.topo().host_down(0, 2));
    CHECK(port.stats.ecn_marked == expected);
    CHECK(b.net.stats().ecn_marked == expected);
    uint64_t ce = 0;
    for (const auto& m : b.delivered) {
        ce += m.ce;
    }
    CHECK(ce == expected);
    CHECK(port.stats.max_backlog_bytes == uint64_t(n) * w);

    SECTION("packets that are not ECN-capable are never marked")
    {
        bench nb(s);
        for (int k = 0; k < n; ++k) {
            nb.inject(0, 2, 0, 50000, 0, false);
            nb.inject(1, 2, 0, 50001, 0, false);
        }
        nb.run();
        CHECK(nb.net.stats().ecn_marked == 0);
        CHECK(nb.delivered.size() == size_t(2 * n));
    }
}

TEST_CASE("a full egress buffer tail-drops what does not fit", "[fabric]")
{
    scenario s = fabric_scenario();
    const uint64_t w = wire_bytes(k_len);
    s.topology.switch_buffer_bytes = w * 41 / 2; // 20.5 packets
    s.topology.ecn_threshold_bytes = 0;
    bench b(s);
    const int n = 60;
    for (int k = 0; k < n; ++k) {
        b.inject(0, 2, 0, 50000);
        b.inject(1, 2, 0, 50001);
    }
    b.run();
    // Reference: pairs arrive one packet time apart; the queue drains one packet per
    // packet time and accepts a packet only if backlog + w fits the buffer.
    uint64_t queued = 0; // in packets, sampled at each pair's arrival
    uint64_t dropped = 0;
    for (int k = 0; k < n; ++k) {
        for (int i = 0; i < 2; ++i) {
            if ((queued + 1) * w > s.topology.switch_buffer_bytes) {
                ++dropped;
            } else {
                ++queued;
            }
        }
        // One packet time passes before the next pair (the first pair starts the link).
        queued -= 1;
    }
    const auto& port = b.net.topo().at(b.net.topo().host_down(0, 2));
    CHECK(dropped > 0);
    CHECK(port.stats.buffer_drops == dropped);
    CHECK(b.net.stats().buffer_drops == dropped);
    CHECK(b.delivered.size() == size_t(2 * n) - dropped);
    CHECK(port.stats.max_backlog_bytes + w <= s.topology.switch_buffer_bytes);
}

TEST_CASE("a failed plane or link drops its packets and only those", "[fabric]")
{
    bench b(fabric_scenario());
    b.net.apply(fault_event{0, fault_action::fail_plane, 1, {}, {}, {}});
    for (uint16_t i = 0; i < 32; ++i) {
        b.inject(0, 5, uint8_t(i % 2), uint16_t(49152 + i), sim_time(i) * 1'000'000);
    }
    b.run();
    CHECK(b.net.stats().failure_drops == 16);
    CHECK(b.delivered.size() == 16);
    for (const auto& m : b.delivered) {
        CHECK(m.plane == 0);
    }

    b.net.apply(fault_event{0, fault_action::restore_plane, 1, {}, {}, {}});
    b.net.apply(fault_event{0, fault_action::fail_link, 0, {}, {}, 5});
    b.delivered.clear();
    for (uint16_t i = 0; i < 32; ++i) {
        b.inject(0, 5, uint8_t(i % 2), uint16_t(49152 + i), sim_time(100 + i) * 1'000'000);
    }
    b.run();
    CHECK(b.net.stats().failure_drops == 32);
    CHECK(b.delivered.size() == 16);

    SECTION("a failed leaf-spine link only drops the flows hashed onto it")
    {
        bench c(fabric_scenario());
        const auto& t = c.net.topo();
        c.net.apply(fault_event{0, fault_action::fail_link, 0, t.leaf_of(0), 2, {}});
        uint64_t via_spine2 = 0;
        for (uint16_t i = 0; i < 64; ++i) {
            const auto sport = uint16_t(49152 + i);
            via_spine2 += t.ecmp_spine(0, t.leaf_of(0), 0, 5, sport) == 2;
            c.inject(0, 5, 0, sport, sim_time(i) * 1'000'000);
        }
        c.run();
        CHECK(via_spine2 > 0);
        CHECK(c.net.stats().failure_drops == via_spine2);
        CHECK(c.delivered.size() == 64 - via_spine2);
    }
}

TEST_CASE("iid loss drops the configured fraction", "[fabric][loss]")
{
    loss_model m(loss_params{loss_kind::iid, 0.1, 1}, 4, 99);
    int drops = 0;
    const int n = 200'000;
    for (int i = 0; i < n; ++i) {
        drops += m.drop(uint32_t(i % 4), sim_time(i));
    }
    CHECK(double(drops) / n == Approx(0.1).margin(0.004));
}

TEST_CASE("gilbert loss has the configured mean rate and burst length", "[fabric][loss]")
{
    const double rate = 0.05;
    const double burst = 4;
    const sim_time slot = 1000;
    loss_model m(loss_params{loss_kind::gilbert, rate, burst}, 1, 5, slot);
    CHECK(m.p_bad_to_good() == Approx(0.25));
    CHECK(m.p_good_to_bad() == Approx(rate / (burst * (1 - rate))));
    int drops = 0;
    int bursts = 0;
    bool prev = false;
    const int n = 400'000;
    for (int i = 0; i < n; ++i) {
        const bool d = m.drop(0, sim_time(i) * slot); // back to back: one slot apart
        drops += d;
        bursts += d && !prev;
        prev = d;
    }
    CHECK(double(drops) / n == Approx(rate).margin(0.005));
    CHECK(double(drops) / bursts == Approx(burst).margin(0.3));
}

TEST_CASE("a gilbert burst is a stretch of time: it does not outlive a silent link", "[fabric][loss]")
{
    // Pairs of packets: the second right behind the first (the next slot), or after a
    // silence of 1,000 slots. Behind a loss the next packet is lost 1 - 1/b of the time;
    // after the silence the chain has forgotten the loss, and it is lost at the mean
    // rate. (A chain stepped per packet carried the burst across any silence: a link
    // that saw only a set-up's retries lost them all in a row.)
    const double rate = 0.1;
    const double burst = 8;
    const sim_time slot = 1000;
    for (const uint64_t gap : {uint64_t(1), uint64_t(1000)}) {
        loss_model m(loss_params{loss_kind::gilbert, rate, burst}, 1, 7, slot);
        int after_loss = 0;
        int lost_again = 0;
        sim_time t = 0;
        for (int i = 0; i < 400'000; ++i) {
            t += 10'000 * slot; // pairs far apart
            const bool first = m.drop(0, t);
            const bool second = m.drop(0, t + gap * slot);
            after_loss += first;
            lost_again += first && second;
        }
        REQUIRE(after_loss > 1000);
        const double p = double(lost_again) / after_loss;
        if (gap == 1) {
            CHECK(p == Approx(1 - 1 / burst).margin(0.03));
        } else {
            CHECK(p == Approx(rate).margin(0.03));
        }
    }
}

TEST_CASE("loss is applied once per packet, on the last hop", "[fabric][loss]")
{
    scenario s = fabric_scenario();
    s.loss = loss_params{loss_kind::iid, 0.5, 1};
    bench b(s);
    for (uint16_t i = 0; i < 400; ++i) {
        b.inject(0, 5, uint8_t(i % 2), uint16_t(49152 + i % 64), sim_time(i) * 1'000'000);
    }
    b.run();
    const auto& t = b.net.topo();
    const uint64_t last_hop = t.at(t.host_down(0, 5)).stats.loss_drops +
                              t.at(t.host_down(1, 5)).stats.loss_drops;
    CHECK(b.net.stats().loss_drops == last_hop);
    CHECK(b.delivered.size() + last_hop == 400);
    CHECK(double(last_hop) / 400 == Approx(0.5).margin(0.08));
}
