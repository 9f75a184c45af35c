// An ACK names the copy that delivered (spec 3.6). A receiver that reads a packet and its
// tail probe in one pass (a process behind a kernel socket, off the CPU while both
// arrived) owes one ACK for both: it must echo the original, so the sender learns its
// probe was not needed. Echoing the probe made every such late packet count as a loss,
// and a latency-bound connection that saw a few of them sent a proactive copy of nearly
// every packet after (spec 5.10).
#include <catch2/catch.hpp>

#include <optional>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

constexpr int k_late_writes = 8;

struct outcome {
    uint64_t tail_probes = 0;
    uint64_t spurious = 0;
    uint64_t copies = 0;
    uint64_t rx_duplicates = 0;
    bool landed = false;
};

// One-packet WRITEs, one at a time. Each of the first k_late_writes is held back until
// its tail probe is sent, and both reach the receiver in one step, original first; then
// as many WRITEs go through untouched.
outcome late_originals()
{
    transport_config t;
    t.paths = 1;
    t.min_rto_ns = 5'000'000; // only the probe fires while the original is held
    t.max_rto_ns = 40'000'000;
    pair_harness h(t);
    const conn_id c = h.connect();
    constexpr int k_writes = 2 * k_late_writes;
    buffer src(h.a(), k_writes * 4096, k_all_access, 7);
    buffer dst(h.b(), k_writes * 4096, k_all_access);
    // Each held original waits off the wire until its probe is sent, then goes on ahead
    // of it at the probe's arrival time.
    int held = 0;
    std::optional<captured> original;
    h.filter = [&](captured& p) {
        if (p.to != 1 || !is_data(p)) {
            return false;
        }
        if ((p.view().flags & wire::bth_flag::retx) == 0) {
            if (held == k_late_writes) {
                return false;
            }
            ++held;
            original = p;
            return true;
        }
        if (original) {
            original->deliver_at = p.deliver_at;
            h.inject(std::move(*original));
            original.reset();
        }
        return false;
    };
    for (int i = 0; i < k_writes; ++i) {
        send_wr wr = make_wr(wr_opcode::write, src, dst, uint64_t(i + 1));
        wr.local.addr += uint64_t(i) * 4096;
        wr.local.length = 4096;
        wr.remote_va += uint64_t(i) * 4096;
        REQUIRE(h.a().post_send(c, wr, h.now()) == post_result::ok);
        REQUIRE(h.run_until([&] { return h.cq[0].size() == size_t(i + 1); }));
        CHECK(h.cq[0][size_t(i)].status == wc_status::success);
    }
    outcome o;
    o.tail_probes = h.a().stats().tail_probes;
    o.spurious = h.a().stats().spurious_retx;
    o.copies = h.a().stats().proactive_copies;
    o.rx_duplicates = h.b().stats().rx_duplicates;
    o.landed = first_mismatch(src.bytes, dst.bytes).empty();
    return o;
}

} // namespace

TEST_CASE("a probe read in the same pass as its original is reported as not needed", "[late_original]")
{
    const outcome o = late_originals();
    CHECK(o.landed);
    // The scenario happened: every held WRITE was probed and its probe arrived second.
    CHECK(o.tail_probes >= uint64_t(k_late_writes));
    CHECK(o.rx_duplicates >= uint64_t(k_late_writes));
    // Each probe is known as unneeded, and none of those late packets counts as a loss:
    // the untouched WRITEs after them get no proactive copies.
    CHECK(o.spurious >= uint64_t(k_late_writes));
    CHECK(o.copies == 0);
}
