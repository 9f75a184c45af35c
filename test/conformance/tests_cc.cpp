// Congestion control seen from the wire: how many new packets the IUT puts in flight
// before an ACK, and how ACK contents (CE counts, RTT, rate hints) change that
// (spec 5.3, 6.1-6.5). The tester withholds ACKs, counts a burst, then answers.
#include <map>
#include <set>

#include "helpers.hpp"

namespace metaroce::conformance {

namespace {

std::vector<rx_pkt> burst(ctx& x, const tconn& c, uint64_t patient_ns = 0)
{
    return new_packets(x, c, x.p.burst_ns(), SIZE_MAX, patient_ns);
}


std::map<uint8_t, size_t> per_path(const std::vector<rx_pkt>& v)
{
    std::map<uint8_t, size_t> m;
    for (const rx_pkt& k : v) {
        ++m[k.v().path];
    }
    return m;
}

struct ack_opts {
    bool marked = false;          // report every packet CE-marked
    uint32_t ts_back_ns = 0;      // echo a tx_ts this much older (a longer RTT)
    uint32_t hint = 0;            // rate_hint_mbps
    int only_path = -1;
};

// Acknowledges everything received, one ACK per path, reporting the packets of `batch`.
void ack_batch(ctx& x, tconn& c, const std::vector<rx_pkt>& batch, const ack_opts& o = {})
{
    const auto n = per_path(batch);
    for (uint8_t i = 0; i < c.paths; ++i) {
        const rx_path& r = c.rx[i];
        if ((o.only_path >= 0 && o.only_path != i) || (r.expected == c.iut_isn && r.bits.none())) {
            continue;
        }
        const uint16_t rx = uint16_t(n.count(i) ? n.at(i) : 1);
        x.p.send_on(c, x.p.ack_pkt(c, i, r.expected, r.bits, r.last_ts - o.ts_back_ns, rx, o.marked ? rx : 0, o.hint),
                    i);
    }
}

// A connection ready for a long WRITE from the IUT, with ACKs in the test's hands.
tconn& sender(ctx& x, uint16_t paths, uint16_t mtu, uint32_t bytes, uint64_t wr_id)
{
    offer o;
    o.paths = paths;
    o.mtu = mtu;
    tconn& c = x.p.connect(o);
    x.p.manual_acks(c);
    const region src = src_region(x, bytes, 40);
    x.post_send(c, req(wr_opcode::write, 2, src, 0, bytes, wr_id));
    return c;
}

// Window dynamics need ACKs within microseconds: a tester answering from user space in
// milliseconds on a real clock is, by spec 6.2a, a congested path.
void need_prompt_acks(ctx& x)
{
    if (!x.exact()) {
        x.na("needs ACKs within microseconds (slower answers count as congestion, spec 6.2a)");
    }
}

// What the IUT's own application may already have had acknowledged (metaroce's app
// sends one SEND per connection) can grow a window by a packet.
size_t slack(ctx& x)
{
    return x.exact() ? 0 : 1;
}

} // namespace

CONFORMANCE_TEST(initial_windows_path_and_connection, "6.1", "5.3")
{
    // One path: the path window (8) limits; four paths: the connection window (16).
    for (uint16_t paths : {uint16_t(1), uint16_t(4)}) {
        tconn& c = sender(x, paths, 1024, 48 * 1024, 40 + paths);
        const std::vector<rx_pkt> first = burst(x, c, k_patient_ns);
        size_t n = first.size();
        size_t want = paths == 1 ? 8 : 16;
        if (n == 1) {
            // conn_cwnd_first = 1: one blind packet; its ACK admits the connection to
            // 16, grown by the packet it acknowledged, and ends the path's first round
            // (+ the additive step on its path).
            const uint64_t rtt_ns = x.t.now_ns() - first[0].d->at_ns;
            ack_all(x, c);
            n = burst(x, c, k_patient_ns).size();
            want = paths == 1 ? std::min<size_t>(17, 8 + additive_step(rtt_ns)) : 17;
        }
        x.check(n >= want && n <= want + slack(x), std::to_string(n) + " packets in flight before any ACK on " +
                                                       std::to_string(paths) + " path(s), expected " +
                                                       std::to_string(want));
        x.p.close_all();
    }
}

CONFORMANCE_TEST(slow_start_grows_by_packets_acked, "6.1")
{
    need_prompt_acks(x);
    // Eight paths (64 packets of path windows), so only the connection window limits.
    tconn& c = sender(x, 8, 1024, 128 * 1024, 50);
    const std::vector<rx_pkt> b1 = burst(x, c);
    const size_t n1 = b1.size();
    x.check(n1 >= 16 && n1 <= 16 + slack(x), "first round of " + std::to_string(n1) + " packets, expected 16");
    // One packet acknowledged: the window grows by one, so two new packets go out.
    const rx_pkt& first = b1.front();
    x.p.send_on(c, x.p.ack_pkt(c, first.v().path, first.v().psn + 1, {}, first.v().tx_ts, 1, 0), first.v().path);
    const std::vector<rx_pkt> b2 = burst(x, c);
    x.check(b2.size() >= 2 && b2.size() <= 2 + slack(x),
            "acknowledging 1 packet in slow start let " + std::to_string(b2.size()) +
                " new packets go (window +1, one freed: 2 expected)");
    // Everything acknowledged: window 16 + n1 + |b2| - ..., i.e. twice what was in flight.
    std::vector<rx_pkt> all = b1;
    all.insert(all.end(), b2.begin(), b2.end());
    ack_batch(x, c, all);
    const size_t n3 = burst(x, c).size();
    const size_t want = 16 + all.size();
    x.check(n3 >= want && n3 <= want + 2 * slack(x), "after acknowledging all " + std::to_string(all.size()) +
                                                         " packets the next round has " + std::to_string(n3) +
                                                         ", expected " + std::to_string(want));
}

CONFORMANCE_TEST(ecn_marks_cut_the_path_window, "6.2", "5.8")
{
    need_prompt_acks(x);
    // alpha starts small (g = 1/16): a few fully marked rounds bring the window below
    // where it started; unmarked it would grow by one packet per round.
    tconn& c = sender(x, 1, 256, 256 * 1024, 51);
    const size_t n1 = burst(x, c).size();
    std::vector<rx_pkt> b;
    size_t smallest = n1;
    std::string seen = std::to_string(n1);
    for (int round = 0; round < 8 && smallest >= n1; ++round) {
        x.p.idle(x.exact() ? 20'000 : 0);
        ack_batch(x, c, {}, {true});
        b = burst(x, c);
        smallest = std::min(smallest, b.size());
        seen.append(" ").append(std::to_string(b.size()));
    }
    x.check(smallest < n1, "rounds with every packet CE-marked never cut the path window (bursts " + seen + ")");
}

CONFORMANCE_TEST(ecn_mark_on_one_path_trims_that_path_only, "6.2", "5.3")
{
    need_prompt_acks(x);
    tconn& c = sender(x, 2, 256, 256 * 1024, 52);
    const auto n1 = per_path(burst(x, c));
    x.check(n1.size() == 2, "the first round did not use both paths");
    size_t p0 = n1.at(0), p1 = n1.at(1);
    std::string seen;
    for (int round = 0; round < 8 && p0 >= n1.at(0); ++round) {
        x.p.idle(x.exact() ? 20'000 : 0);
        ack_batch(x, c, {}, {false, 0, 0, 1}); // path 1 unmarked first
        ack_batch(x, c, {}, {true, 0, 0, 0});
        const auto n = per_path(burst(x, c));
        p0 = n.count(0) ? n.at(0) : 0;
        p1 = n.count(1) ? n.at(1) : 0;
        seen.append(" ").append(std::to_string(p0)).append("/").append(std::to_string(p1));
    }
    x.check(p0 < n1.at(0), "the marked path's window was never cut (path 0/1 bursts" + seen + ")");
    x.check(p1 >= n1.at(1), "the unmarked path's window shrank with the other's marks (path 0/1 bursts" + seen + ")");
}

CONFORMANCE_TEST(rtt_growth_counts_as_a_mark, "6.2a")
{
    // The RTT is set through the echoed timestamps, which needs the virtual clock.
    x.need_virtual_time();
    tconn& c = sender(x, 1, 256, 256 * 1024, 53);
    const size_t n1 = burst(x, c).size();
    x.p.idle(10'000);
    ack_batch(x, c, {}); // min RTT about 30 us
    const size_t n2 = burst(x, c).size();
    x.check(n2 >= n1, "an unmarked round shrank the window");
    size_t smallest = n2;
    std::string seen = std::to_string(n2);
    for (int round = 0; round < 10 && smallest >= n2; ++round) {
        x.p.idle(50'000);
        ack_batch(x, c, {}, {false, 150'000}); // RTT samples about 200 us: 170 over the minimum
        const size_t n = burst(x, c).size();
        smallest = std::min(smallest, n);
        seen.append(" ").append(std::to_string(n));
    }
    x.check(smallest < n2, "ACKs whose RTT exceeds the minimum by more than delay_mark never cut the window (bursts " +
                               seen + ")");
}

CONFORMANCE_TEST(sack_loss_keeps_the_windows, "6.3", "5.5")
{
    need_prompt_acks(x);
    tconn& c = sender(x, 1, 256, 64 * 1024, 54);
    const std::vector<rx_pkt> b1 = burst(x, c);
    x.check(b1.size() >= 4, "too few packets in the first round");
    x.p.idle(x.exact() ? 10'000 : 0);
    const uint32_t p0 = b1.front().v().psn;
    std::bitset<wire::k_sack_bits> sack;
    for (size_t i = 1; i < b1.size(); ++i) {
        sack[i] = true;
    }
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0, sack, b1.back().v().tx_ts, uint16_t(b1.size() - 1), 0), 0);
    x.p.must([&](const rx_pkt& k) { return tester::data_for(c)(k) && k.v().psn == p0 && is_retx(k); },
             x.p.reply_ns(), "the resend of the PSN missing from the SACK");
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + uint32_t(b1.size()), {}, b1.back().v().tx_ts, 1, 0), 0);
    const size_t n2 = burst(x, c).size();
    x.check(n2 >= b1.size(), "after a loss found by SACK the path sent " + std::to_string(n2) +
                                 " packets, fewer than the " + std::to_string(b1.size()) + " before");
}

CONFORMANCE_TEST(timeout_halves_the_path_window, "6.3", "5.6")
{
    need_prompt_acks(x);
    tconn& c = sender(x, 1, 256, 64 * 1024, 55);
    const std::vector<rx_pkt> b1 = burst(x, c);
    const uint32_t p0 = b1.front().v().psn;
    // Silence until the RTO has resent the whole round (the tail-loss probe resends one).
    std::set<uint32_t> resent;
    rx_pkt last{};
    while (resent.size() < b1.size()) {
        last = x.p.must([&](const rx_pkt& d) { return tester::data_for(c)(d) && is_retx(d); },
                        40 * x.p.reply_ns(), "the timeout's resends");
        resent.insert(last.v().psn);
    }
    // The ACK echoes the newest resend, as a receiver does: the IUT's first RTT sample.
    const uint64_t rtt_ns = x.t.now_ns() - last.d->at_ns;
    x.p.send_on(c, x.p.ack_pkt(c, 0, p0 + uint32_t(b1.size()), {}, last.v().tx_ts, 1, 0), 0);
    const size_t n2 = burst(x, c).size();
    // Half the initial window, plus the additive step an unmarked round then adds (6.2).
    const size_t half = std::min<size_t>(b1.size(), 8) / 2;
    const size_t step = additive_step(rtt_ns);
    x.check(n2 >= 1 && n2 <= half + step, "after a timeout the path sent " + std::to_string(n2) +
                                              " packets, expected half its initial window (" + std::to_string(half) +
                                              ", +" + std::to_string(step) + " for the round that acknowledged them)");
}

CONFORMANCE_TEST(sender_paces_at_the_rate_hint, "6.5")
{
    x.need_virtual_time();
    tconn& c = sender(x, 4, 1024, 512 * 1024, 56);
    const std::vector<rx_pkt> b1 = burst(x, c);
    // RTT 100 us (echoed), hint 10 Gb/s: W = 2 * R * min_rtt / mtu = 244 packets, so
    // only the pacing shows: (1084 + 66) * 8 / 10000 Mb/s = 920 ns per new packet.
    ack_batch(x, c, b1, {false, 100'000, 10'000});
    const std::vector<rx_pkt> b2 = new_packets(x, c, 30'000, 12);
    x.check(b2.size() >= 10, "too few new packets after the hinted ACKs");
    for (size_t i = 2; i < b2.size(); ++i) {
        const uint64_t gap = b2[i].d->at_ns - b2[i - 1].d->at_ns;
        const uint64_t want = (uint64_t(b2[i - 1].len()) + 66) * 8'000 / 10'000;
        x.check(gap + 1 >= want && gap <= want + 1, "new packets " + std::to_string(gap) + " ns apart under a 10 Gb/s hint, expected " +
                                                    std::to_string(want) + " ns");
    }
}

CONFORMANCE_TEST(hint_caps_packets_in_flight_and_has_a_floor, "6.5")
{
    x.need_virtual_time();
    {
        tconn& c = sender(x, 4, 1024, 256 * 1024, 57);
        const std::vector<rx_pkt> b1 = burst(x, c);
        x.p.idle(10'000);
        // R = 2000 Mb/s over the smallest RTT sample: W = 2 * R * min_rtt / mtu.
        uint64_t min_rtt = UINT64_MAX;
        for (const auto& [path, n] : per_path(b1)) {
            (void)n;
            uint64_t last = 0;
            for (const rx_pkt& k : b1) {
                last = k.v().path == path ? std::max(last, k.d->at_ns) : last;
            }
            min_rtt = std::min(min_rtt, x.t.now_ns() - last);
        }
        const double w = 2 * 2000e6 / 8 * double(min_rtt) * 1e-9 / 1024;
        ack_batch(x, c, b1, {false, 0, 2'000});
        const size_t n = new_packets(x, c, 2'000'000, 64).size();
        x.check(double(n) >= w - 1 && double(n) <= w + 1, std::to_string(n) + " packets in flight under a hint that allows " +
                                                              std::to_string(w) + " (min(cwnd, W))");
        x.p.close_all();
    }
    tconn& c = sender(x, 4, 1024, 256 * 1024, 58);
    const std::vector<rx_pkt> b1 = burst(x, c);
    const auto floored = x.mark("rx_hint_floored");
    // A 10 Mb/s hint is raised to 100 Mb/s: (1084 + 66) * 8 / 100 = 92 us between packets.
    ack_batch(x, c, b1, {false, 1'000'000, 10});
    const std::vector<rx_pkt> b2 = new_packets(x, c, 400'000, 3);
    x.check_counted(floored);
    x.check(b2.size() >= 2, "too few new packets after a 10 Mb/s hint");
    const uint64_t gap = b2[1].d->at_ns - b2[0].d->at_ns;
    x.check(gap >= 91'000 && gap <= 93'000, "new packets " + std::to_string(gap) +
                                                " ns apart under a 10 Mb/s hint: expected the 100 Mb/s floor (92 us)");
}

} // namespace metaroce::conformance
