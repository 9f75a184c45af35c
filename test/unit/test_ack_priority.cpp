// ACKs leave ahead of data (spec 5.4): a node that sends on many connections while it
// receives on others must not hold the ACKs of what it receives behind a round of its
// own data packets, or its peers' RTTs swing with its send load and their tail probes
// and RTOs fire with nothing lost (issue 12: every resend of the loss-free 8-plane run).
// The one exception, a held pass's reply (io::send_held), is checked here too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

// One frame pulled from a core, as the receiving side will see it.
struct pulled {
    rx_meta meta;
    std::vector<uint8_t> bytes;
    wire::packet_view view() const { return wire::parse(bytes).pkt; }
};

// Pulls at most one frame from `e`, as a NIC with room for one more packet does.
bool pull_one(endpoint& e, uint32_t src_addr, uint64_t now, pulled& out)
{
    static std::vector<uint8_t> buf(16384);
    bool got = false;
    io::span_io sio{std::span<uint8_t>(buf), [&](const tx_frame& f) {
                        out.meta = rx_meta{src_addr, f.plane, f.udp_sport, false};
                        out.bytes.assign(f.buf.begin(), f.buf.begin() + ptrdiff_t(f.len));
                        got = true;
                        return io::tx_next::stop;
                    }};
    io::pull_tx(e, sio, now, 1);
    return got;
}

// The I/O of a driver for io::send_held: each frame's opcode and whether the core called
// it data, in bursts, each tx_flush() closing one (flushes counted).
struct burst_io {
    std::vector<uint8_t> buf = std::vector<uint8_t>(16384);
    std::vector<std::vector<std::pair<wire::opcode, bool>>> bursts{{}};
    int flushes = 0;
    bool tx_backlog(uint64_t) { return false; }
    std::span<uint8_t> tx_buffer(uint64_t) { return buf; }
    void tx_unused() {}
    io::tx_next tx_send(const tx_frame& f, uint64_t)
    {
        bursts.back().emplace_back(wire::parse({f.buf.data(), f.len}).pkt.op, f.is_data());
        return io::tx_next::more;
    }
    void tx_flush(uint64_t)
    {
        ++flushes;
        if (!bursts.back().empty()) {
            bursts.emplace_back();
        }
    }
};

// A connects to B once; B connects to A `n` times (B's own sends).
struct two_way {
    std::unique_ptr<pair_harness> h;
    conn_id ab = k_no_conn;
    std::vector<conn_id> ba;

    two_way(const transport_config& t, uint32_t n)
    {
        h = std::make_unique<pair_harness>(t);
        ab = h->connect();
        for (uint32_t i = 0; i < n; ++i) {
            ba.push_back(h->b().connect(pair_harness::k_addr_a, h->now()));
        }
        REQUIRE(h->run_until([&] {
            return std::all_of(ba.begin(), ba.end(), [&](conn_id c) { return pair_harness::established(h->b(), c); });
        }));
        h->run_until([] { return false; }, 50'000); // the handshake's last packets land
    }
};

} // namespace

TEST_CASE("an ACK leaves ahead of data queued on the node's other connections", "[ack][timers]")
{
    transport_config t;
    t.paths = 1;
    constexpr uint32_t k_senders = 32;
    two_way x(t, k_senders);
    pair_harness& h = *x.h;
    // B has a message to send on each of its 32 connections: 32 connections ready.
    buffer bsrc(h.b(), 64 << 10, k_all_access, 3);
    buffer adst(h.a(), 64 << 10, k_all_access);
    for (uint32_t i = 0; i < k_senders; ++i) {
        REQUIRE(h.b().post_send(x.ba[i], make_wr(wr_opcode::write, bsrc, adst, i), h.now()) == post_result::ok);
    }
    // A writes one packet to B; it asks for an ACK (the last packet of a message).
    buffer asrc(h.a(), 1024, k_all_access, 5);
    buffer bdst(h.b(), 1024, k_all_access);
    REQUIRE(h.a().post_send(x.ab, make_wr(wr_opcode::write, asrc, bdst, 99), h.now()) == post_result::ok);
    pulled d;
    REQUIRE(pull_one(h.a(), pair_harness::k_addr_a, h.now(), d));
    REQUIRE(d.view().op == wire::opcode::write);
    h.b().on_packet(d.meta, d.bytes, h.now());
    // B's next packet out is that ACK, not the 32 data packets queued before it arrived.
    pulled first;
    REQUIRE(pull_one(h.b(), pair_harness::k_addr_b, h.now(), first));
    CHECK(first.view().op == wire::opcode::ack);
}

TEST_CASE("ACKs go first but do not silence the node's data", "[ack][timers]")
{
    transport_config t;
    t.paths = 128;
    t.cc.conn_cwnd_first = 128; // A's first packets all go out at once
    t.cc.conn_cwnd_init = 128;
    two_way x(t, 4);
    pair_harness& h = *x.h;
    buffer bsrc(h.b(), 64 << 10, k_all_access, 3);
    buffer adst(h.a(), 64 << 10, k_all_access);
    for (uint32_t i = 0; i < x.ba.size(); ++i) {
        REQUIRE(h.b().post_send(x.ba[i], make_wr(wr_opcode::write, bsrc, adst, i), h.now()) == post_result::ok);
    }
    // A's first packets go one per path and each asks for an ACK: B owes one per path.
    buffer asrc(h.a(), 512 << 10, k_all_access, 5);
    buffer bdst(h.b(), 512 << 10, k_all_access);
    REQUIRE(h.a().post_send(x.ab, make_wr(wr_opcode::write, asrc, bdst, 99), h.now()) == post_result::ok);
    pulled d;
    uint32_t delivered = 0;
    while (pull_one(h.a(), pair_harness::k_addr_a, h.now(), d)) {
        h.b().on_packet(d.meta, d.bytes, h.now());
        ++delivered;
    }
    REQUIRE(delivered >= 100);
    std::vector<wire::opcode> out;
    pulled p;
    while (out.size() < 400 && pull_one(h.b(), pair_harness::k_addr_b, h.now(), p)) {
        out.push_back(p.view().op);
    }
    const auto acks = std::count(out.begin(), out.end(), wire::opcode::ack);
    REQUIRE(acks >= 100);
    // The first ACKs go ahead of B's data, but data gets a turn at least every 65 packets.
    CHECK(std::count(out.begin(), out.begin() + 64, wire::opcode::ack) == 64);
    for (size_t i = 0; i + 65 <= out.size() && i < size_t(acks); ++i) {
        INFO("packets " << i << ".." << i + 64);
        CHECK(std::count(out.begin() + ptrdiff_t(i), out.begin() + ptrdiff_t(i + 65), wire::opcode::ack) < 65);
    }
}

TEST_CASE("a held pass's reply goes ahead of the ACK it owes, in a burst of its own", "[ack][held]")
{
    transport_config t;
    t.paths = 1;
    two_way x(t, 1);
    pair_harness& h = *x.h;
    buffer asrc(h.a(), 1024, k_all_access, 5);
    buffer bdst(h.b(), 1024, k_all_access);
    buffer bsrc(h.b(), 1024, k_all_access, 3);
    buffer adst(h.a(), 1024, k_all_access);
    burst_io bio;
    SECTION("an ACK is owed: the reply, then the ACK, two bursts")
    {
        // A's one-packet WRITE asks for an ACK; B's answer is posted inside the held pass.
        REQUIRE(h.a().post_send(x.ab, make_wr(wr_opcode::write, asrc, bdst, 1), h.now()) == post_result::ok);
        pulled d;
        REQUIRE(pull_one(h.a(), pair_harness::k_addr_a, h.now(), d));
        h.b().on_packet(d.meta, d.bytes, h.now());
        REQUIRE(h.b().post_send(x.ba[0], make_wr(wr_opcode::write, bsrc, adst, 2), h.now()) == post_result::ok);
        REQUIRE(h.b().acks_owed());
        REQUIRE(io::send_held(h.b(), bio, h.now(), 32).pulled == 2);
        REQUIRE(bio.bursts.size() == 3); // two bursts, and the open one after them
        REQUIRE(bio.bursts[0].size() == 1);
        CHECK(bio.bursts[0][0] == std::pair{wire::opcode::write, true});
        REQUIRE(bio.bursts[1].size() == 1);
        CHECK(bio.bursts[1][0] == std::pair{wire::opcode::ack, false});
    }
    SECTION("no ACK owed (a bulk sender taking ACKs in): one burst, no extra flush")
    {
        REQUIRE(h.b().post_send(x.ba[0], make_wr(wr_opcode::write, bsrc, adst, 2), h.now()) == post_result::ok);
        REQUIRE_FALSE(h.b().acks_owed());
        REQUIRE(io::send_held(h.b(), bio, h.now(), 32).pulled == 1);
        CHECK(bio.flushes == 1);
        REQUIRE(bio.bursts.size() == 2); // one burst, and the open one after it
        REQUIRE(bio.bursts[0].size() == 1);
        CHECK(bio.bursts[0][0] == std::pair{wire::opcode::write, true});
    }
}

TEST_CASE("both nodes busy through a one-packet NIC: nothing lost, no tail probe, RTO or reroute",
          "[ack][timers]")
{
    transport_config t;
    t.paths = 4;
    constexpr uint32_t k_senders = 32;
    two_way x(t, k_senders);
    pair_harness& h = *x.h;
    constexpr size_t k_bytes = 256 << 10;
    buffer bsrc(h.b(), k_bytes, k_all_access, 3);
    std::vector<std::unique_ptr<buffer>> adst;
    for (uint32_t i = 0; i < k_senders; ++i) {
        adst.push_back(std::make_unique<buffer>(h.a(), k_bytes, k_all_access));
        REQUIRE(h.b().post_send(x.ba[i], make_wr(wr_opcode::write, bsrc, *adst[i], i), h.now()) == post_result::ok);
    }
    constexpr uint32_t k_msgs = 16;
    buffer asrc(h.a(), k_bytes, k_all_access, 5);
    buffer bdst(h.b(), k_bytes, k_all_access);
    for (uint32_t i = 0; i < k_msgs; ++i) {
        REQUIRE(h.a().post_send(x.ab, make_wr(wr_opcode::write, asrc, bdst, 100 + i), h.now()) == post_result::ok);
    }
    const counters a0 = h.a().stats();
    const counters b0 = h.b().stats();
    // 100 Gb/s links, 1 us apart: each node puts one packet on its link per serialization
    // time, the rest waits in its core (as a NIC's short TX ring makes it wait).
    endpoint* ep[2] = {&h.a(), &h.b()};
    const uint32_t addr[2] = {pair_harness::k_addr_a, pair_harness::k_addr_b};
    uint64_t link_free[2] = {h.now(), h.now()};
    struct in_flight {
        uint64_t at;
        pulled p;
    };
    std::deque<in_flight> wire[2]; // to side 0 and side 1, each in arrival order
    uint64_t done[2] = {0, 0};
    uint64_t now = h.now();
    const uint64_t end = now + 20'000'000;
    while ((done[0] < k_msgs || done[1] < k_senders) && now < end) {
        for (int s = 0; s < 2; ++s) {
            while (!wire[s].empty() && wire[s].front().at <= now) {
                ep[s]->on_packet(wire[s].front().p.meta, wire[s].front().p.bytes, now);
                wire[s].pop_front();
            }
            io::run_due_timers(*ep[s], now);
            pulled p;
            if (link_free[s] <= now && pull_one(*ep[s], addr[s], now, p)) {
                link_free[s] = now + (p.bytes.size() + 64) * 8 / 100;
                wire[1 - s].push_back({link_free[s] + 1000, std::move(p)});
            }
            completion wc[64];
            for (size_t n; (n = ep[s]->poll_cq(wc)) > 0;) {
                for (size_t i = 0; i < n; ++i) {
                    REQUIRE(wc[i].status == wc_status::success);
                }
                done[s] += n;
            }
        }
        now += 20;
    }
    REQUIRE(done[0] == k_msgs);
    REQUIRE(done[1] == k_senders);
    CHECK(first_mismatch(asrc.bytes, bdst.bytes).empty());
    for (const auto& d : adst) {
        CHECK(first_mismatch(bsrc.bytes, d->bytes).empty());
    }
    // Nothing was lost: every resend would be spurious.
    for (int s = 0; s < 2; ++s) {
        const counters& c = ep[s]->stats();
        const counters& c0 = s == 0 ? a0 : b0;
        INFO("side " << s);
        CHECK(c.tail_probes - c0.tail_probes == 0);
        CHECK(c.timeouts - c0.timeouts == 0);
        CHECK(c.reroutes - c0.reroutes == 0);
        CHECK(c.retransmits - c0.retransmits == 0);
    }
}
