// Proactive copies (spec 5.10): a connection with window room that new data leaves
// unused and measurable loss sends its oldest unacknowledged packets once more, so a
// message's lost packet is recovered without waiting for loss detection. Never loss-free;
// never past the window; each transmission copied at most once (a resend of a packet whose
// copy was lost too is copied in turn); data placed and completed once.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <utility>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// 8-packet WRITEs over wide_paths(), 4 at a time: latency bound, the window has room.

constexpr uint32_t k_len = 8 * 4096;
constexpr int k_rounds = 24;
constexpr int k_batch = 4;

struct outcome {
    counters a;
    counters b;
    uint64_t completions = 0;
    uint64_t copies_seen = 0;         // data packets sent again with no loss decision (RETX, first resend)
    uint32_t max_in_air = 0;          // data packets of a on the wire at once
    std::set<std::pair<uint8_t, uint32_t>> sent_twice;
    uint32_t resends_copied = 0;      // packets with a copy sent after a resend of theirs
    uint32_t older_resends_copied = 0; // ... of those, resent after later PSNs of their path
};

// Every `drop_every`-th packet (0: none) loses its first `drop_sends` transmissions
// (the original, then its copy or resend); later ones pass.
outcome run(transport_config t, int drop_every, int drop_sends = 1)
{
    pair_harness h(t);
    const conn_id c = h.connect();
    outcome o;
    std::map<std::pair<uint8_t, uint32_t>, int> sends;
    std::set<std::pair<uint8_t, uint32_t>> doomed, resent, resent_behind;
    std::map<uint8_t, uint32_t> newest; // each path's highest PSN sent so far
    std::map<uint8_t, uint16_t> own_sport; // each path's route, from its first transmissions
    std::multiset<uint64_t> in_air;   // delivery times of a's data packets on the wire
    int firsts = 0;
    h.filter = [&](captured& p) {
        if (p.to != 1 || !is_data(p)) {
            return false;
        }
        const auto v = p.view();
        const std::pair<uint8_t, uint32_t> key{v.path, v.psn};
        const int n = ++sends[key];
        if (n == 2) {
            o.sent_twice.insert(key);
        }
        if ((v.flags & wire::bth_flag::retx) == 0) {
            own_sport.emplace(v.path, p.frame.udp_sport);
            newest[v.path] = v.psn;
            if (drop_every != 0 && ++firsts % drop_every == 0) {
                doomed.insert(key);
            }
        } else if (p.frame.udp_sport == own_sport[v.path]) {
            resent.insert(key); // a resend keeps its path's route; a copy takes the next one's
            if (v.psn != newest[v.path]) {
                resent_behind.insert(key);
            }
        } else if (resent.contains(key)) {
            ++o.resends_copied;
            o.older_resends_copied += resent_behind.contains(key) ? 1 : 0;
        }
        if (doomed.contains(key) && n <= drop_sends) {
            return true;
        }
        while (!in_air.empty() && *in_air.begin() <= h.now()) {
            in_air.erase(in_air.begin());
        }
        in_air.insert(p.deliver_at);
        o.max_in_air = std::max<uint32_t>(o.max_in_air, uint32_t(in_air.size()));
        return false;
    };
    for (int round = 0; round < k_rounds; ++round) {
        std::vector<buffer> srcs;
        std::vector<buffer> dsts;
        srcs.reserve(k_batch);
        dsts.reserve(k_batch);
        for (int i = 0; i < k_batch; ++i) {
            srcs.emplace_back(h.a(), k_len, k_all_access, uint8_t(round * k_batch + i + 1));
            dsts.emplace_back(h.b(), k_len, k_all_access);
        }
        const size_t done = h.cq[0].size();
        for (int i = 0; i < k_batch; ++i) {
            REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, srcs[size_t(i)], dsts[size_t(i)], uint64_t(i)), h.now()) ==
                    post_result::ok);
        }
        REQUIRE(h.run_until([&] { return h.cq[0].size() == done + k_batch; }));
        h.run_until([] { return false; }, 200'000); // late copies and ACKs settle
        for (int i = 0; i < k_batch; ++i) {
            CHECK(first_mismatch(srcs[size_t(i)].bytes, dsts[size_t(i)].bytes).empty());
        }
    }
    for (const auto& wc : h.cq[0]) {
        CHECK(wc.status == wc_status::success);
    }
    o.completions = h.cq[0].size();
    o.a = h.a().stats();
    o.b = h.b().stats();
    return o;
}

} // namespace

TEST_CASE("Copies: a lossy, application-limited connection copies unacknowledged packets into room",
          "[copies]")
{
    const outcome o = run(wide_paths(), 5); // 20 % of first transmissions lost
    CHECK(o.completions == uint64_t(k_rounds * k_batch)); // each message completes once
    CHECK(o.a.proactive_copies > 0);
    // Copies carry their packets' PSNs: the receiver keeps one of each and drops the other.
    CHECK(o.b.rx_duplicates > 0);
    CHECK(o.b.rx_payload_bytes == uint64_t(k_rounds) * k_batch * k_len); // placed once
    // Copies recover losses ahead of detection: fewer resends than losses.
    CHECK(o.a.retransmits < uint64_t(k_rounds * k_batch * 8 / 5));
    CHECK(o.a.timeouts == 0);
}

TEST_CASE("Copies: never on a loss-free connection", "[copies]")
{
    const outcome o = run(wide_paths(), 0);
    CHECK(o.completions == uint64_t(k_rounds * k_batch));
    CHECK(o.a.proactive_copies == 0);
    CHECK(o.a.retransmits == 0);
    CHECK(o.b.rx_duplicates == 0);
    CHECK(o.sent_twice.empty());
}

TEST_CASE("Copies: never past the connection's window", "[copies]")
{
    // A window of 12 packets: 4 messages of 8 are 32 packets, so new data fills the
    // window until the last ones go; copies then take only what the window has left.
    transport_config t = wide_paths();
    t.cc.conn_cwnd_max = 12;
    t.cc.conn_cwnd_init = 12;
    const outcome o = run(t, 5);
    CHECK(o.completions == uint64_t(k_rounds * k_batch));
    CHECK(o.a.proactive_copies > 0);
    CHECK(o.max_in_air <= 12);
}

TEST_CASE("Copies: a resend of a PSN older than its path's newest is copied too", "[copies]")
{
    // 8 paths carry 4 packets each per batch: a lost packet is resent after later PSNs of
    // its path left. Its loss is shown by a later transmission's ACK (5.5), and there is
    // none after the resend: the resend is its path's latest transmission and copied.
    transport_config t;
    t.paths = 8;
    const outcome o = run(t, 5, 2);
    CHECK(o.completions == uint64_t(k_rounds * k_batch));
    CHECK(o.older_resends_copied > 0);
    CHECK(o.b.rx_payload_bytes == uint64_t(k_rounds) * k_batch * k_len); // placed once
    CHECK(o.a.timeouts == 0);
}

TEST_CASE("Copies: a resend of a packet whose copy was lost too is copied in turn", "[copies]")
{
    // Every fifth packet loses its original and its copy: the resend that RACK sends is
    // a new transmission, copied like a first one, so one more loss of it would not cost
    // a second loss detection.
    const outcome o = run(wide_paths(), 5, 2);
    CHECK(o.completions == uint64_t(k_rounds * k_batch));
    CHECK(o.a.proactive_copies > 0);
    CHECK(o.resends_copied > 0);
    CHECK(o.b.rx_payload_bytes == uint64_t(k_rounds) * k_batch * k_len); // placed once
    CHECK(o.a.timeouts == 0);
}
