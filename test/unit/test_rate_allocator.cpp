// The receiver's rate allocator (spec 6.4): shares re-split at once when senders join,
// leave or are expected, and the queue in front of the receiver is handed back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "metaroce/rate_allocator.hpp"

using namespace metaroce;

namespace {

constexpr uint64_t k_cap = 100'000; // Mb/s
constexpr double k_util = 0.9;
constexpr uint64_t k_epoch = 20'000; // ns
// One call stands for a burst of packets: enough that every sender here uses its
// whole share (a sender using less is, rightly, granted less).
constexpr uint32_t k_burst = 256 * 1024;

// A burst whose last packet queued `queued_ns` on its way (sender and receiver clocks
// agree here).
bool send(rate_allocator& r, uint32_t slot, uint64_t now, uint64_t queued_ns = 0, uint16_t path = 0)
{
    return r.on_packet(slot, k_burst, false, now, path, uint32_t(now - 1'000 - queued_ns));
}

// Slots 0..3 send unqueued bursts over two epochs: one water-fill later their shares
// are no longer newcomers' and each sender's smallest delay is known.
void four_senders_settled(rate_allocator& r)
{
    for (uint32_t s = 0; s < 4; ++s) {
        send(r, s, 1'000 + s);
    }
    for (uint32_t s = 0; s < 4; ++s) {
        send(r, s, k_epoch + 2'000 + s);
    }
}

} // namespace

TEST_CASE("a lone sender gets no hint; a second one halves both shares at once", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    CHECK(send(r, 3, 1'000));
    CHECK(r.hint_mbps(3) == 0);
    // Same epoch: nothing closed it, yet both senders are told half right away.
    CHECK(send(r, 5, 2'000));
    CHECK(r.hint_mbps(3) == 45'000);
    CHECK(r.hint_mbps(5) == 45'000);
    CHECK(send(r, 7, 3'000));
    CHECK(r.hint_mbps(3) == 30'000);
    CHECK(r.hint_mbps(7) == 30'000);
    CHECK_FALSE(send(r, 7, 4'000)); // not a newcomer any more
    CHECK(r.active() == 3);
}

TEST_CASE("a released sender's share goes back to the others at once", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    four_senders_settled(r);
    CHECK(r.hint_mbps(0) == 22'500);
    r.release(3);
    CHECK(r.hint_mbps(3) == 0);
    CHECK(r.hint_mbps(0) == 30'000);
    CHECK(r.hint_mbps(2) == 30'000);
}

TEST_CASE("a drained sender leaves two round trips later unless new data comes", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    four_senders_settled(r);
    for (uint32_t s = 0; s < 4; ++s) {
        r.set_rtt(s, 5'000);
    }
    REQUIRE(r.hint_mbps(0) == 22'500);
    const uint64_t t = k_epoch + 3'000;
    // Slot 3's last packet (4 KiB: a gap of 1.5 us at its share), sent at t - 1'000,
    // says it has nothing more queued. It may leave after two round trips (10 us).
    r.on_packet(3, 4096, false, t, 0, uint32_t(t - 1'000));
    r.drained(3, uint32_t(t - 1'000), t);
    CHECK(r.active() == 4); // not yet: a closed-loop sender posts again within a round trip
    // Its earlier packets (sprayed) and a resend arrive later: it still leaves.
    r.on_packet(3, 4096, false, t + 500, 0, uint32_t(t - 1'500));
    r.on_packet(3, 4096, false, t + 600, 0, uint32_t(t + 400), true);
    r.take_resplit();
    // Two of its round trips later, on any packet, it is gone: its share is the others'.
    send(r, 0, t + 10'001);
    CHECK(r.active() == 3);
    CHECK(r.take_resplit());
    CHECK(r.hint_mbps(3) == 0);
    CHECK(r.hint_mbps(1) == 30'000);
    // Slot 2 drains too, but new data follows within the wait: it stays.
    r.on_packet(2, 4096, false, t + 11'000, 0, uint32_t(t + 10'500));
    r.drained(2, uint32_t(t + 10'500), t + 11'000);
    send(r, 2, t + 14'000);
    send(r, 0, t + 22'000);
    CHECK(r.active() == 3);
    // Slot 1 drains and sends nothing new: gone two round trips later.
    r.on_packet(1, 4096, false, t + 23'000, 0, uint32_t(t + 22'500));
    r.drained(1, uint32_t(t + 22'500), t + 23'000);
    send(r, 0, t + 33'001);
    CHECK(r.active() == 2);
    CHECK(r.hint_mbps(2) != 0); // a member still
}

TEST_CASE("a lone sender that drains keeps its membership: nobody takes its share", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    send(r, 0, 1'000);
    r.drained(0, 0, 1'000);
    CHECK_FALSE(send(r, 0, 50'000)); // not a newcomer: no ACK at once
    CHECK(r.active() == 1);
}

TEST_CASE("an expected sender's share is set aside before it sends", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    r.expect(1, 0);
    r.expect(2, 0);
    r.expect(3, 0);
    CHECK(r.expected() == 3);
    send(r, 0, 1'000);
    // The first sender's first ACK already carries its final share.
    CHECK(r.hint_mbps(0) == 22'500);
    CHECK(r.take_resplit());
    // The expected ones join without moving anybody's share: no push is needed.
    CHECK(send(r, 1, 2'000));
    CHECK_FALSE(r.take_resplit());
    CHECK(r.hint_mbps(0) == 22'500);
    CHECK(r.hint_mbps(1) == 22'500);
    CHECK(r.expected() == 2);
    // Expected senders that never come stop holding a share after a few epochs.
    for (uint64_t t = 1; t <= 12; ++t) {
        send(r, 0, 2'000 + t * k_epoch);
        send(r, 1, 2'000 + t * k_epoch + 1);
    }
    CHECK(r.expected() == 0);
    // Half of 90 %, plus what the receiver lends while nothing marks (up to half of 100 %).
    CHECK(r.hint_mbps(0) >= 45'000);
    CHECK(r.hint_mbps(0) <= 50'000);
}

TEST_CASE("senders told a share that newcomers cut are listed for a pushed ACK", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    send(r, 0, 1'000, 0, 4);
    send(r, 1, 1'100, 0, 6);
    r.told(0, r.hint_mbps(0));
    r.told(1, r.hint_mbps(1));
    std::vector<uint32_t> stale;
    auto collect = [&](uint32_t slot, uint16_t path) {
        stale.push_back(slot);
        CHECK(path == (slot == 0 ? 4 : 6));
    };
    r.for_each_stale(collect);
    CHECK(stale.empty()); // told what they have
    send(r, 2, 1'200);
    r.for_each_stale(collect);
    CHECK(stale == std::vector<uint32_t>{0, 1}); // 45 -> 30 Gb/s: a third less
    stale.clear();
    r.told(0, r.hint_mbps(0));
    r.told(1, r.hint_mbps(1));
    send(r, 3, 1'300);
    r.for_each_stale(collect);
    CHECK(stale.empty()); // 30 -> 22.5 Gb/s: a quarter, not yet worth an ACK
    send(r, 4, 1'400);
    r.for_each_stale(collect);
    CHECK(stale == std::vector<uint32_t>{0, 1}); // 30 -> 18 Gb/s (slot 2 was never told)
}

TEST_CASE("a sender silent for several of its packet gaps leaves, and its share is re-split", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    send(r, 0, 1'000);
    send(r, 1, 1'000);
    send(r, 2, 1'000);
    // Its bursts came 70 us apart at its share: four such gaps of silence, it is gone.
    for (uint64_t t = 1; t <= 20; ++t) {
        send(r, 0, t * k_epoch + 10);
        send(r, 1, t * k_epoch + 20);
        if (t == 6) {
            CHECK(r.active() == 3); // a few of its gaps: still there
        }
    }
    CHECK(r.active() == 2);
    CHECK(r.hint_mbps(0) >= 45'000); // half of 90 %, plus the headroom lent (no marks)
    CHECK(r.hint_mbps(0) <= 50'000);
}

TEST_CASE("a standing queue in front of the receiver is handed back", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    four_senders_settled(r); // each sender's smallest delay learnt in a clean epoch
    CHECK(r.hint_mbps(0) == 22'500);
    // An epoch in which every packet queued at least 10 us.
    for (uint32_t s = 0; s < 4; ++s) {
        send(r, s, 2 * k_epoch + 3'000 + s, 10'000);
    }
    send(r, 0, 3 * k_epoch + 4'000, 10'000);
    const uint32_t cut = r.hint_mbps(0);
    CHECK(cut < 22'500 * 3 / 4);
    CHECK(cut >= 22'500 / 4);
    // The queue is gone: the full share is back after one clean epoch (and, no packet
    // having been marked for 4 epochs, the first step of the headroom with it).
    for (uint32_t s = 0; s < 4; ++s) {
        send(r, s, 3 * k_epoch + 5'000 + s);
    }
    send(r, 0, 4 * k_epoch + 6'000);
    CHECK(r.hint_mbps(0) >= 22'500);
    CHECK(r.hint_mbps(0) <= 22'500 + 313);
}

TEST_CASE("a queue that many senders build and drain once per packet gap is not standing", "[rates]")
{
    // 60 senders, each one packet per 60 us (three epochs) at nearly its share. Their
    // packets arrive spread over the gap: those of its first epoch find the queue empty,
    // the later ones find 5 us of it. Every epoch after the first is all queued, yet the
    // queue drains once per gap: judged over one packet per member, nothing is cut.
    constexpr uint32_t n = 60;
    constexpr uint64_t gap = 3 * k_epoch;
    constexpr uint32_t pkt = 4096;
    const uint64_t cap = uint64_t(double(pkt) * 8000 / double(gap) * n / k_util / 0.95); // Mb/s
    rate_allocator r(cap, k_util, k_epoch, 64);
    const uint32_t full = uint32_t(double(cap) * k_util / n);
    uint32_t lowest = UINT32_MAX;
    for (uint64_t k = 0; k < 12; ++k) {
        for (uint32_t i = 0; i < n; ++i) {
            const uint64_t at = k * gap + i * (gap / n) + 1'000;
            const uint64_t queued = k > 0 && i >= n / 3 ? 5'000 : 0;
            r.on_packet(i, pkt, false, at, 0, uint32_t(at - 1'000 - queued));
            if (k >= 4) {
                lowest = std::min(lowest, r.hint_mbps(i));
            }
        }
    }
    CHECK(lowest >= full * 99 / 100);
}

TEST_CASE("the headroom is lent while nothing marks and taken back at the first mark", "[rates]")
{
    rate_allocator r(k_cap, k_util, k_epoch, 16);
    four_senders_settled(r);
    CHECK(r.hint_mbps(0) == 22'500); // a quarter of 90 %
    // One packet per sender per epoch, none marked (or, with `mark_every`, one packet
    // of the epoch every `mark_every` epochs marked); returns the share of slot 0.
    uint64_t t = 2 * k_epoch;
    const auto run = [&](uint32_t epochs, uint32_t mark_every) {
        for (uint32_t e = 0; e < epochs; ++e, t += k_epoch) {
            for (uint32_t s = 0; s < 4; ++s) {
                const bool ce = mark_every != 0 && s == 0 && e % mark_every == 0;
                r.on_packet(s, k_burst, ce, t + 3'000 + s, 0, uint32_t(t + 3'000 + s - 1'000));
            }
        }
        return r.hint_mbps(0);
    };
    // Quiet: after 4 clean epochs the shares grow a step per clean measurement, to a
    // quarter of the whole capacity.
    CHECK(run(2, 0) == 22'500);
    CHECK(run(2, 0) > 22'500); // 4 epochs without a mark are enough
    CHECK(run(8, 0) == 25'000);
    // A marked measurement takes two steps back (of 8 that fill the 10 % headroom): its
    // epoch closes with the next packet.
    run(1, 1);
    const uint32_t marked = run(1, 0);
    CHECK(marked < 25'000);
    CHECK(marked >= 25'000 - 2 * 313);
    // A fabric that marks every few epochs never fills: the headroom stays with it.
    run(16, 4);
    CHECK(run(16, 4) == 22'500);
}

TEST_CASE("without a capacity there are no hints", "[rates]")
{
    rate_allocator r(0, k_util, k_epoch, 16);
    send(r, 0, 1'000);
    send(r, 1, 1'000);
    r.expect(2, 0);
    CHECK(r.hint_mbps(0) == 0);
    CHECK(r.active() == 0);
}
