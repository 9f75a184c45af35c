// The engine is a pure function of its inputs: the same run twice gives the same
// packets, byte for byte, with the same routes and timings.
#include <catch2/catch.hpp>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

struct run_result {
    std::vector<captured> sent;
    std::vector<completion> cq[2];
    counters stats[2];
    uint64_t end_ns = 0;
};

// Every op, two planes, random loss and ECN marks, a reroute-inducing black hole.
run_result run_once(uint64_t loss_seed)
{
    transport_config t;
    t.planes = 2;
    t.paths = 8;
    t.mtu = 2048;
    pair_harness h(t);
    const conn_id c = h.connect();
    const conn_id pc = h.peer_conn();
    xorshift rng{loss_seed};
    const uint16_t dead = h.a().inspect(c)->path[5].udp_sport;
    h.filter = [&](captured& p) {
        const uint64_t r = rng.next();
        if (p.frame.udp_sport == dead) {
            return true;
        }
        if (r % 100 < 3) {
            return true;
        }
        p.meta.ce = (r >> 8) % 50 == 0;
        return false;
    };
    buffer w_src(h.a(), 300000, k_all_access, 1, 0x10000000);
    buffer w_dst(h.b(), 300000, k_all_access, 0, 0x20000000);
    buffer s_src(h.a(), 20000, k_all_access, 2, 0x30000000);
    buffer s_dst(h.b(), 20000, k_all_access, 0, 0x40000000);
    buffer r_src(h.b(), 100000, k_all_access, 3, 0x50000000);
    buffer r_dst(h.a(), 100000, k_all_access, 0, 0x60000000);
    REQUIRE(h.b().post_recv(pc, 1, make_recv(s_dst, 7)) == post_result::ok);
    REQUIRE(h.b().post_recv(pc, 2, make_recv(s_dst, 8)) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write, w_src, w_dst, 1, 0), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::send_imm, s_src, s_dst, 2, 1), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::read, r_dst, r_src, 3, 0), h.now()) == post_result::ok);
    REQUIRE(h.a().post_send(c, make_wr(wr_opcode::write_imm, s_src, w_dst, 4, 2), h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return h.cq[0].size() == 4 && h.cq[1].size() == 2; }));
    CHECK(first_mismatch(r_src.bytes, r_dst.bytes).empty());
    h.a().close(c, h.now());
    h.run_until([&] { return h.a().connections().empty() && h.b().connections().empty(); });
    run_result r;
    r.sent = h.sent;
    r.cq[0] = h.cq[0];
    r.cq[1] = h.cq[1];
    r.stats[0] = h.a().stats();
    r.stats[1] = h.b().stats();
    r.end_ns = h.now();
    return r;
}

bool same_route(const captured& x, const captured& y)
{
    return x.deliver_at == y.deliver_at && x.to == y.to && x.frame.len == y.frame.len &&
           x.frame.dst_addr == y.frame.dst_addr && x.frame.plane == y.frame.plane &&
           x.frame.udp_sport == y.frame.udp_sport && x.frame.ect == y.frame.ect &&
           x.meta.ce == y.meta.ce;
}

bool same_counters(const counters& x, const counters& y)
{
    return x.tx_packets == y.tx_packets && x.rx_packets == y.rx_packets && x.retransmits == y.retransmits &&
           x.timeouts == y.timeouts && x.reroutes == y.reroutes && x.tx_acks == y.tx_acks &&
           x.rx_duplicates == y.rx_duplicates && x.rx_ce == y.rx_ce && x.completions == y.completions;
}

} // namespace

TEST_CASE("the same run twice gives byte-identical packet captures", "[determinism]")
{
    const run_result a = run_once(2024);
    const run_result b = run_once(2024);
    REQUIRE(a.sent.size() > 200);
    REQUIRE(a.sent.size() == b.sent.size());
    size_t diffs = 0;
    for (size_t i = 0; i < a.sent.size(); ++i) {
        const std::string m = first_mismatch(a.sent[i].bytes, b.sent[i].bytes);
        if (!m.empty() || !same_route(a.sent[i], b.sent[i])) {
            if (diffs++ < 3) {
                UNSCOPED_INFO("packet " << i << " differs " << m);
            }
        }
    }
    CHECK(diffs == 0);
    CHECK(a.end_ns == b.end_ns);
    for (int s = 0; s < 2; ++s) {
        REQUIRE(a.cq[s].size() == b.cq[s].size());
        for (size_t i = 0; i < a.cq[s].size(); ++i) {
            CHECK(a.cq[s][i].wr_id == b.cq[s][i].wr_id);
            CHECK(a.cq[s][i].status == b.cq[s][i].status);
        }
        CHECK(same_counters(a.stats[s], b.stats[s]));
    }
    // The run really exercised recovery and rerouting.
    CHECK(a.stats[0].retransmits > 0);
    CHECK(a.stats[0].reroutes > 0);
    CHECK(a.stats[1].rx_ce > 0);
    // A different loss pattern gives a different capture: the comparison can fail.
    const run_result other = run_once(2025);
    bool differs = other.sent.size() != a.sent.size();
    for (size_t i = 0; !differs && i < a.sent.size(); ++i) {
        differs = a.sent[i].bytes != other.sent[i].bytes;
    }
    CHECK(differs);
}
