// Incast under a receiver's rate hints (spec 5.6, 6.4, 6.5): timers, pacing and the
// allocator's hand-back of a standing queue.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "metaroce/rate_allocator.hpp"
#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// B splits 1 Gb/s between two connections from A: a 450 Mb/s share, one 4 KiB packet
// every ~74 us.
// A (seed `seed_a`) sends to B, whose inbound capacity is 1 Gb/s at 0.9 utilization.
std::unique_ptr<pair_harness> contended_harness(uint64_t seed_a = 11)
{
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, transport_config{}, seed_a);
    endpoint_config cb = pair_harness::config(pair_harness::k_addr_b, transport_config{}, 22);
    cb.inbound_capacity_mbps = 1'000;
    cb.hint_utilization = 0.9;
    return std::make_unique<pair_harness>(ca, cb, 1000);
}

struct contended {
    std::unique_ptr<pair_harness> h;
    conn_id c1 = k_no_conn;
    conn_id c2 = k_no_conn;

    explicit contended(uint64_t seed_a = 11)
    {
        h = contended_harness(seed_a);
        c1 = h->connect();
        c2 = h->a().connect(pair_harness::k_addr_b, h->now());
        REQUIRE(h->run_until([&] { return pair_harness::established(h->a(), c2); }));
    }
};

// 64 KiB written on each of the two connections; both land byte for byte.
void write_on_both(contended& x)
{
    pair_harness& h = *x.h;
    constexpr size_t k_bytes = 64 << 10;
    buffer src(h.a(), k_bytes, k_all_access, 1);
    buffer d1(h.b(), k_bytes, k_all_access);
    buffer d2(h.b(), k_bytes, k_all_access);
    REQUIRE(h.a().post_send(x.c1, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(x.c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 2; }));
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
}

} // namespace

TEST_CASE("under a hint, a packet queued for less than one hinted gap draws no probe or RTO",
          "[incast][timers]")
{
    contended x;
    pair_harness& h = *x.h;
    // Once A has its share, every data packet waits 60 us at the "last hop": the queue of
    // one packet of each other sender that the share allows. Nothing is lost.
    uint32_t share = 0; // A's latest share while both connections were sending
    h.filter = [&](captured& p) {
        const uint32_t hint = h.a().inspect(x.c1)->rate_hint_mbps;
        if (p.to == 1 && is_op(p, wire::opcode::write) && hint != 0) {
            share = hint;
            p.deliver_at += 60'000;
        }
        return false;
    };
    write_on_both(x);
    // The share: 450 Mb/s, less what B reads as standing queue in the 60 us (spec 6.4).
    // (Once one connection said DRAINED the other is alone and hears no hint: hence
    // the share seen while both sent.)
    REQUIRE(share != 0);
    REQUIRE(share <= 450);
    // Each path's few RTT samples are old and short (2 * srtt + ack_delay is ~10 us):
    // only the hinted gap in the timers keeps them from firing.
    CHECK(h.a().stats().tail_probes == 0);
    CHECK(h.a().stats().timeouts == 0);
    CHECK(h.a().stats().retransmits == 0);
}

TEST_CASE("under a hint, a packet that is really lost is still recovered", "[incast][timers]")
{
    contended x;
    pair_harness& h = *x.h;
    int hinted = 0;
    h.filter = [&](captured& p) {
        // Drop the third data packet sent under the hint, once.
        return p.to == 1 && is_op(p, wire::opcode::write) && h.a().inspect(x.c1)->rate_hint_mbps != 0 &&
               ++hinted == 3;
    };
    write_on_both(x);
    CHECK(h.a().stats().retransmits >= 1);
}

TEST_CASE("an ACCEPT from a contended receiver carries the share set aside for the sender",
          "[incast][hint]")
{
    const std::unique_ptr<pair_harness> hp = contended_harness();
    pair_harness& h = *hp;
    // The first connection is alone (no hint); the second is accepted while the first is
    // still expected: two sharers of 900 Mb/s.
    const conn_id c1 = h.connect();
    const conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c2); }));
    std::map<uint32_t, std::vector<uint32_t>> hints; // by connection: an ACCEPT and its copy
    for (const captured& p : h.sent) {
        if (p.to == 0 && is_op(p, wire::opcode::accept)) {
            hints[p.view().dst_conn].push_back(p.view().hello->rate_hint_mbps.host());
        }
    }
    REQUIRE(hints.size() == 2);
    CHECK(hints[c1] == std::vector<uint32_t>(hints[c1].size(), 0));
    CHECK(hints[c2] == std::vector<uint32_t>(hints[c2].size(), 450));
    // The initiator has no ACK yet; the ACCEPT's share lengthens its first packets'
    // timers: one packet on c2 queued 60 us (less than one 450 Mb/s gap) draw no probe.
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::write)) {
            p.deliver_at += 60'000;
        }
        return false;
    };
    buffer src(h.a(), 4096, k_all_access, 1);
    buffer d2(h.b(), 4096, k_all_access);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 1; }));
    CHECK(first_mismatch(src.bytes, d2.bytes).empty());
    CHECK(h.a().stats().tail_probes == 0);
    CHECK(h.a().stats().timeouts == 0);
    (void)c1;
}

TEST_CASE("a standing queue is handed back over at least two of the senders' packet gaps",
          "[incast][rates]")
{
    // 256 senders of 4 KiB packets share 90 Gb/s: a packet every ~93 us each. They hear a
    // cut with their next ACK, a gap later: a cut sized to drain the queue in two 20 us
    // epochs would overshoot, and the shares would swing (spec 6.4).
    constexpr uint32_t n = 256;
    constexpr uint64_t epoch = 20'000;
    rate_allocator r(100'000, 0.9, epoch, n);
    constexpr uint64_t gap = 93'000;
    // Sender s sends at s * gap / n + k * gap: about 55 packets per epoch in all.
    auto run = [&](uint64_t from, uint64_t to, uint64_t queued_ns) {
        for (uint64_t k = from / gap; k * gap < to + gap; ++k) {
            for (uint32_t s = 0; s < n; ++s) {
                const uint64_t now = 1'000 + k * gap + s * gap / n;
                if (now >= from && now < to) {
                    r.on_packet(s, 4096, false, now, 0, uint32_t(now - 1'000 - queued_ns));
                }
            }
        }
    };
    run(0, 10 * epoch, 0);
    const uint32_t full = r.hint_mbps(0);
    CHECK(full >= 90'000 / n); // and some of the headroom lent: nothing marked
    CHECK(full <= 100'000 / n);
    // Every packet for two of their gaps queued 10 us (a queue that outlives a gap is
    // standing): it is handed back over 2 x 93 us, about 5 % of the capacity, not over
    // 40 us (a quarter).
    run(10 * epoch, 10 * epoch + 2 * gap + 2 * epoch, 10'000);
    const uint32_t cut = r.hint_mbps(0);
    CHECK(cut < full);
    CHECK(cut > full * 9 / 10);
}

TEST_CASE("a larger pushed share shrinks the wait left by the ratio of the shares", "[incast][pacing]")
{
    // Three senders share 900 Mb/s; the third leaves, and the others are pushed 450
    // instead of 300 at once. Restarting every sender's gap at that instant would line
    // their next packets up (spec 6.5); scaled, each keeps its place in the gap.
    const std::unique_ptr<pair_harness> hp = contended_harness();
    pair_harness& h = *hp;
    const conn_id c1 = h.connect();
    const uint32_t c1_at_b = h.peer_conn();
    const conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    const conn_id c3 = h.a().connect(pair_harness::k_addr_b, h.now());
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c3); }));
    std::vector<uint64_t> sends;                  // c1's data packets
    std::vector<std::pair<uint64_t, uint32_t>> acks; // c1's ACKs: arrival, hint
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::write) && p.view().dst_conn == c1_at_b) {
            sends.push_back(h.now());
        }
        if (p.to == 0 && is_op(p, wire::opcode::ack) && p.view().dst_conn == c1) {
            acks.emplace_back(p.deliver_at, p.view().ack->rate_hint_mbps.host());
        }
        return false;
    };
    constexpr size_t k_long = 256 << 10;
    buffer src(h.a(), k_long, k_all_access, 1);
    buffer d1(h.b(), k_long, k_all_access);
    buffer d2(h.b(), k_long, k_all_access);
    buffer d3(h.b(), 16 << 10, k_all_access);
    send_wr w3 = make_wr(wr_opcode::write, src, d3, 3);
    w3.local.length = 16 << 10;
    REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::write, src, d1, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::write, src, d2, 2), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c3, w3, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 3; }));
    CHECK(first_mismatch(src.bytes, d1.bytes).empty());
    // The first ACK with a share more than 4/3 of the one before, once c1 is paced.
    size_t k = 1;
    while (k < acks.size() && !(acks[k - 1].second != 0 && 3 * uint64_t(acks[k].second) > 4 * uint64_t(acks[k - 1].second))) {
        ++k;
    }
    REQUIRE(k < acks.size());
    const uint64_t t = acks[k].first;
    const double ratio = double(acks[k - 1].second) / double(acks[k].second);
    INFO("share " << acks[k - 1].second << " -> " << acks[k].second << " at " << t);
    // c1's sends around it: two before (its old gap), the first after.
    size_t j = 0;
    while (j < sends.size() && sends[j] <= t) {
        ++j;
    }
    REQUIRE(j >= 2);
    REQUIRE(j < sends.size());
    const uint64_t old_gap = sends[j - 1] - sends[j - 2];
    const double due = double(sends[j - 1] + old_gap);  // where the old share put it
    const double want = double(t) + (due - double(t)) * ratio;
    INFO("last " << sends[j - 1] << " old gap " << old_gap << " next " << sends[j]);
    REQUIRE(due > double(t) + 2'000); // the push came well inside the gap
    CHECK(std::abs(double(sends[j]) - want) < 1'000);
}

namespace {

// A reads from B over two connections at once: A is the receiver the data converges on,
// its inbound 1 Gb/s shared at 0.9 (two expected senders: 450 Mb/s each, one 4 KiB
// packet per ~73 us).
struct two_readers {
    static endpoint_config reader()
    {
        endpoint_config c = pair_harness::config(pair_harness::k_addr_a, transport_config{}, 11);
        c.inbound_capacity_mbps = 1'000;
        c.hint_utilization = 0.9;
        return c;
    }
    size_t bytes;
    uint64_t delay;
    pair_harness h{reader(), pair_harness::config(pair_harness::k_addr_b, transport_config{}, 22), delay};
    conn_id c1 = h.connect();
    conn_id c2 = h.a().connect(pair_harness::k_addr_b, h.now());
    buffer remote{h.b(), bytes, k_all_access, 9};
    buffer l1{h.a(), bytes, k_all_access};
    buffer l2{h.a(), bytes, k_all_access};
    uint64_t done = 0;

    // `one_way_ns`: each direction's delay.
    explicit two_readers(size_t read_bytes = 4096, uint64_t one_way_ns = 1000) : bytes(read_bytes), delay(one_way_ns)
    {
        REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), c2); }));
    }
    // Everything B sends A waits `ns` in A's last hop from now on (less than one gap):
    // the responses and the ACKs of the READ_REQs.
    void queue_at_reader(uint64_t ns)
    {
        h.filter = [ns](captured& p) {
            if (p.to == 0) {
                p.deliver_at += ns;
            }
            return false;
        };
    }
    // Both connections read `remote` once more; the bytes that landed are checked.
    void read_both()
    {
        REQUIRE(h.a().post_send(c1, make_wr(wr_opcode::read, l1, remote, 1), h.now()) == post_result::ok);
        REQUIRE(h.a().post_send(c2, make_wr(wr_opcode::read, l2, remote, 2), h.now()) == post_result::ok);
        done += 2;
        REQUIRE(h.run_until([&] { return h.cq[0].size() == done; }));
        CHECK(first_mismatch(remote.bytes, l1.bytes).empty());
        CHECK(first_mismatch(remote.bytes, l2.bytes).empty());
    }
};

} // namespace

TEST_CASE("a READ_REQ tells its responder the reader's share, and the first responses' queue "
          "at the reader draws no probe on either side", "[incast][hint][read]")
{
    two_readers r;
    pair_harness& h = r.h;
    r.queue_at_reader(60'000);
    h.sent.clear();
    r.read_both();
    // Both READs were posted before any response: two expected senders of 900 Mb/s.
    std::vector<uint32_t> told;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_op(p, wire::opcode::read_req)) {
            told.push_back(p.view().read_hint_mbps);
        }
    }
    REQUIRE(told.size() == 2);
    CHECK(told[0] == 450);
    CHECK(told[1] == 450);
    // Neither the responder's first response nor the READ_REQ waiting for its ACK has an
    // RTT sample that knows the queue: only the share in their timers keeps them quiet.
    CHECK(h.b().stats().tail_probes == 0);
    CHECK(h.a().stats().tail_probes == 0);
    CHECK(h.a().stats().timeouts + h.b().stats().timeouts == 0);
    CHECK(h.a().stats().retransmits + h.b().stats().retransmits == 0);
}

TEST_CASE("after the first ACK, a READ_REQ's ACK queued behind the responses at the reader "
          "draws no probe", "[incast][hint][read]")
{
    two_readers r;
    pair_harness& h = r.h;
    r.read_both(); // no queue: A's round-trip samples are the bare link's
    REQUIRE(h.a().stats().tail_probes == 0);
    // Now the responses queue at A for less than a gap at its share, and so do the ACKs
    // of A's READ_REQs: A's samples (a few us) do not know it, its share for them does.
    r.queue_at_reader(60'000);
    h.sent.clear();
    r.read_both();
    size_t reqs = 0;
    for (const captured& p : h.sent) {
        if (p.to == 1 && is_op(p, wire::opcode::read_req)) {
            ++reqs;
            CHECK(p.view().read_hint_mbps == 450);
        }
    }
    CHECK(reqs == 2); // none resent
    CHECK(h.a().stats().tail_probes == 0);
    CHECK(h.a().stats().timeouts + h.b().stats().timeouts == 0);
    CHECK(h.a().stats().retransmits + h.b().stats().retransmits == 0);
}

TEST_CASE("a reader's READ_REQs leave one first response apart at its share of inbound capacity",
          "[incast][hint][read][pacing]")
{
    two_readers r;
    pair_harness& h = r.h;
    std::vector<uint64_t> reqs; // when each READ_REQ left A
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::read_req)) {
            reqs.push_back(h.now());
        }
        return false;
    };
    r.read_both(); // posted together
    REQUIRE(reqs.size() == 2);
    // A hands out 900 Mb/s: a 4 KiB response (plus headers and framing) takes ~37 us of
    // it, so the second responder's first packet comes after the first one's, not with it.
    const uint64_t slot = 4096ull * 8000 / 900;
    INFO("READ_REQs at " << reqs[0] << " and " << reqs[1]);
    CHECK(reqs[1] - reqs[0] >= slot);
    CHECK(reqs[1] - reqs[0] < 2 * slot);
    // Once the responses' slots are past, a READ alone waits for nothing.
    const uint64_t free_at = reqs[1] + 2 * slot;
    reqs.clear();
    h.run_until([&] { return h.now() >= free_at; });
    const uint64_t t0 = h.now();
    REQUIRE(h.a().post_send(r.c1, make_wr(wr_opcode::read, r.l1, r.remote, 3), h.now()) == post_result::ok);
    ++r.done;
    REQUIRE(h.run_until([&] { return h.cq[0].size() == r.done; }));
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0] - t0 < 5'000);
    CHECK(first_mismatch(r.remote.bytes, r.l1.bytes).empty());
}

TEST_CASE("a READ responder paces from its first packet at the share the READ_REQ told",
          "[incast][hint][read][pacing]")
{
    // A short round trip (the first ACK is back long before the second packet is due) and
    // a long one (it comes back after three gaps: the window it admits must not catch up
    // the gaps it waited for in a burst).
    const uint64_t one_way = GENERATE(uint64_t(1'000), uint64_t(100'000));
    two_readers r(16 << 10, one_way); // 4 packets each
    pair_harness& h = r.h;
    std::vector<uint64_t> resp; // c1's responses leaving B
    h.filter = [&](captured& p) {
        if (p.to == 0 && is_op(p, wire::opcode::read_resp) && p.view().dst_conn == r.c1) {
            resp.push_back(h.now());
        }
        return false;
    };
    r.read_both();
    REQUIRE(resp.size() == 4);
    // 450 Mb/s: one 4 KiB packet per ~73 us. Whether the first ACK is back after 2 us or
    // after 200 us, no response follows the one before sooner than that gap.
    const uint64_t gap = 4096ull * 8000 / 450;
    for (size_t i = 1; i < resp.size(); ++i) {
        INFO("response " << i << " " << resp[i] - resp[i - 1] << " ns after the one before");
        CHECK(resp[i] - resp[i - 1] >= gap);
    }
}

TEST_CASE("a reader's READ_REQ slots take the planes in turn, and each responder starts on its "
          "READ_REQ's plane", "[incast][hint][read][planes]")
{
    transport_config t;
    t.planes = 2;
    endpoint_config ca = pair_harness::config(pair_harness::k_addr_a, t, 11);
    ca.inbound_capacity_mbps = 1'000;
    ca.hint_utilization = 0.9;
    pair_harness h(ca, pair_harness::config(pair_harness::k_addr_b, t, 22), 1000);
    std::vector<conn_id> conns{h.connect()};
    for (int i = 1; i < 4; ++i) {
        conns.push_back(h.a().connect(pair_harness::k_addr_b, h.now()));
    }
    REQUIRE(h.run_until([&] { return pair_harness::established(h.a(), conns.back()); }));
    constexpr size_t k_bytes = 16 << 10;
    buffer remote(h.b(), k_bytes, k_all_access, 5);
    std::vector<std::unique_ptr<buffer>> local;
    std::vector<int> req_plane;                 // READ_REQs, in the order they left
    std::vector<std::pair<uint32_t, int>> resp; // (connection at A, plane) of the first response each
    h.filter = [&](captured& p) {
        if (p.to == 1 && is_op(p, wire::opcode::read_req)) {
            req_plane.push_back(p.frame.plane);
        }
        if (p.to == 0 && is_op(p, wire::opcode::read_resp)) {
            const uint32_t c = p.view().dst_conn;
            if (std::none_of(resp.begin(), resp.end(), [&](const auto& r) { return r.first == c; })) {
                resp.emplace_back(c, p.frame.plane);
            }
        }
        return false;
    };
    for (size_t i = 0; i < conns.size(); ++i) {
        local.push_back(std::make_unique<buffer>(h.a(), k_bytes, k_all_access));
        REQUIRE(h.a().post_send(conns[i], make_wr(wr_opcode::read, *local[i], remote, i), h.now()) ==
                post_result::ok);
    }
    REQUIRE(h.run_until([&] { return h.cq[0].size() == conns.size(); }));
    for (const auto& l : local) {
        CHECK(first_mismatch(remote.bytes, l->bytes).empty());
    }
    REQUIRE(req_plane.size() == conns.size());
    REQUIRE(resp.size() == conns.size());
    for (size_t i = 0; i < req_plane.size(); ++i) {
        CHECK(req_plane[i] == int(i % 2)); // slot i's plane
        CHECK(resp[i].second == req_plane[i]); // each responder's first packet on it
    }
}
