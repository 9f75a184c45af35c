// The probe timeout's floor (transport_config::min_probe_ns, spec 5.6): a peer that
// answers a few round trips late (a process behind a kernel socket, descheduled) gets
// its tail probed needlessly at 2 RTTs; with the floor the late ACK comes first.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

struct outcome {
    uint64_t tail_probes = 0;
    uint64_t rx_duplicates = 0;
    bool landed = false;
};

// One WRITE of one packet after a first one that set the path's RTT (a few us); the
// second one's ACK is held 300 us on the wire.
outcome write_with_late_ack(uint64_t min_probe_ns)
{
    transport_config t;
    t.paths = 1;
    t.min_rto_ns = 5'000'000; // the kernel-UDP RTO: only the probe can fire before the ACK
    t.max_rto_ns = 40'000'000;
    t.min_probe_ns = min_probe_ns;
    pair_harness h(t);
    const conn_id c = h.connect();
    buffer src(h.a(), 2 * 4096, k_all_access, 7);
    buffer dst(h.b(), 2 * 4096, k_all_access);
    send_wr first = make_wr(wr_opcode::write, src, dst, 1);
    first.local.length = 4096;
    send_wr second = first;
    second.wr_id = 2;
    second.local.addr += 4096;
    second.remote_va += 4096;
    REQUIRE(h.a().post_send(c, first, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 1; }));
    h.filter = [&](captured& p) {
        if (p.to == 0 && is_op(p, wire::opcode::ack)) {
            p.deliver_at += 300'000;
        }
        return false;
    };
    REQUIRE(h.a().post_send(c, second, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(h.cq[0][1].status == wc_status::success);
    h.run_until([] { return false; }, 2'000'000);
    outcome o;
    o.tail_probes = h.a().stats().tail_probes;
    o.rx_duplicates = h.b().stats().rx_duplicates;
    o.landed = first_mismatch(src.bytes, dst.bytes).empty();
    return o;
}

} // namespace

TEST_CASE("without a probe floor a late ACK costs a needless tail probe", "[probe_floor]")
{
    const outcome o = write_with_late_ack(0);
    CHECK(o.landed);
    CHECK(o.tail_probes >= 1);
    CHECK(o.rx_duplicates >= 1);
}

TEST_CASE("a probe floor above the ACK's lateness sends nothing twice", "[probe_floor]")
{
    const outcome o = write_with_late_ack(1'000'000);
    CHECK(o.landed);
    CHECK(o.tail_probes == 0);
    CHECK(o.rx_duplicates == 0);
}
