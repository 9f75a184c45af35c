// A held pass (worker::poll(now, false) .. send_held), as metaroce-perf's loop runs it,
// over one net_ring plane in one process: a SEND ping-pong where each side answers
// inside the pass. Checks, on the wire between the two ports, that the reply leaves
// ahead of the ACK the pass built, and at the receiver that an ACK arriving in a held
// pass is taken in only by send_held (the reply's completion first, the ACK's after).
// Every echo's bytes are compared. Exit 0 on success.
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/net_headers.hpp"
#include "dpdk/node.hpp"
#include "metaroce/wire/headers.hpp"
#include "ring_link.hpp"

using namespace metaroce;

namespace {

constexpr uint32_t k_a = 0x0a000001;
constexpr uint32_t k_b = 0x0a000002;
constexpr uint32_t k_msg = 64;
constexpr int k_rounds = 40;
// A connection's first round trip sends one packet (cc_config::conn_cwnd_first): until
// the first ACK each way is in, a reply waits for it. Judged from this round on.
constexpr int k_warm = 4;
constexpr size_t k_op_at = dpdk::k_l2_len + dpdk::k_l3_len + sizeof(dpdk::udp_header) + 1;

void fail(const std::string& why) { throw std::runtime_error(why); }

// Takes what sits in a ring (frames one port sent, not yet received) to read their
// opcodes, and puts it back in the same order.
std::vector<uint8_t> peek_opcodes(rte_ring* r)
{
    std::array<void*, 64> m;
    const unsigned n = rte_ring_dequeue_burst(r, m.data(), unsigned(m.size()), nullptr);
    std::vector<uint8_t> ops;
    for (unsigned i = 0; i < n; ++i) {
        const auto* mb = static_cast<rte_mbuf*>(m[i]);
        ops.push_back(mb->data_len > k_op_at ? rte_pktmbuf_mtod(mb, const uint8_t*)[k_op_at] : 0xff);
    }
    if (rte_ring_enqueue_burst(r, m.data(), n, nullptr) != n) {
        fail("could not put the frames back");
    }
    return ops;
}

struct cq_count {
    int sends = 0;
    int recvs = 0;
};

cq_count drain(endpoint& ep)
{
    cq_count k;
    std::array<completion, 16> cq;
    for (size_t n; (n = ep.poll_cq(cq)) > 0;) {
        for (size_t i = 0; i < n; ++i) {
            if (cq[i].status != wc_status::success) {
                fail("a completion in error: " + std::string(to_string(cq[i].status)));
            }
            ++(cq[i].op == wc_opcode::recv ? k.recvs : k.sends);
        }
    }
    return k;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        dpdk::eal_init(argc, argv);
        const test::ring_link link = test::make_ring_link("hp", 1024);
        dpdk::node_params pa;
        pa.node_addr = k_a;
        pa.ports = {link.a};
        pa.accept_incoming = false;
        pa.mbufs = 2047;
        pa.seed = 5;
        dpdk::node_params pb = pa;
        pb.node_addr = k_b;
        pb.ports = {link.b};
        pb.accept_incoming = true;
        pb.seed = 6;
        dpdk::node na(pa);
        dpdk::node nb(pb);
        endpoint& ea = na.w().ep();
        endpoint& eb = nb.w().ep();
        // A: ping at 0, echo lands at k_msg. B: ping lands at 0 and is echoed from there.
        dpdk::eal_buffer ba_buf("hp_a", 2 * k_msg, -1);
        dpdk::eal_buffer bb_buf("hp_b", k_msg, -1);
        const uint32_t acc = access::local_write;
        const memory_region ma = *ea.memory().register_region(ba_buf.data(), 2 * k_msg, acc);
        const memory_region mb = *eb.memory().register_region(bb_buf.data(), k_msg, acc);
        // The endpoints' time is the test's: 200 ns a call, so no probe or RTO fires
        // because the test itself is slow (it reads the ring between the passes).
        struct fake_clock {
            uint64_t t = 1'000'000;
            uint64_t now_ns() noexcept { return t += 200; }
        } clk;

        const conn_id ca = ea.connect(k_b, clk.now_ns());
        for (uint64_t end = clk.now_ns() + 100'000'000ull;;) {
            na.w().poll(clk.now_ns());
            nb.w().poll(clk.now_ns());
            std::array<conn_event, 8> ev;
            ea.poll_events(ev);
            eb.poll_events(ev);
            const auto info = ea.inspect(ca);
            if (info && info->state == conn_state::established && !eb.connections().empty()) {
                break;
            }
            if (clk.now_ns() > end) {
                fail("no connection");
            }
        }
        const conn_id cb = eb.connections().at(0);
        auto post_recv = [](endpoint& ep, conn_id c, const memory_region& m, uint64_t off) {
            recv_wr r;
            r.local = sge{m.va + off, k_msg, m.lkey};
            if (ep.post_recv(c, 0, r) != post_result::ok) {
                fail("post_recv refused");
            }
        };
        auto post_send = [&](endpoint& ep, conn_id c, const memory_region& m, uint64_t now) {
            send_wr wr;
            wr.op = wr_opcode::send;
            wr.local = sge{m.va, k_msg, m.lkey};
            if (ep.post_send(c, wr, now) != post_result::ok) {
                fail("post_send refused");
            }
        };

        int replies_first = 0; // held passes whose reply left ahead of their ACK
        int acks_later = 0;    // held passes that took an ACK in only at send_held
        for (int i = 0; i < k_rounds; ++i) {
            for (uint32_t k = 0; k < k_msg; ++k) {
                ba_buf.data()[k] = uint8_t(i * 31 + k);
            }
            std::memset(ba_buf.data() + k_msg, 0, k_msg);
            post_recv(ea, ca, ma, k_msg);
            post_recv(eb, cb, mb, 0);
            post_send(ea, ca, ma, clk.now_ns());
            na.w().poll(clk.now_ns()); // the ping leaves

            // B: a held pass takes the ping in and builds its ACK; the echo is posted
            // inside the pass; send_held sends it.
            const uint64_t deadline = clk.now_ns() + 20'000'000ull; // 100,000 calls
            int got = 0;
            while (got == 0) {
                nb.w().poll(clk.now_ns(), false);
                got = drain(eb).recvs;
                if (got != 0) {
                    post_send(eb, cb, mb, clk.now_ns());
                }
                nb.w().send_held(clk.now_ns());
                if (clk.now_ns() > deadline) {
                    fail("round " + std::to_string(i) + ": the ping never arrived");
                }
            }
            const std::vector<uint8_t> ops = peek_opcodes(link.ba);
            const auto ack = uint8_t(wire::opcode::ack);
            const auto send = uint8_t(wire::opcode::send);
            size_t first_ack = ops.size(), first_send = ops.size();
            for (size_t k = ops.size(); k-- > 0;) {
                if (ops[k] == ack) {
                    first_ack = k;
                } else if (ops[k] == send) {
                    first_send = k;
                }
            }
            if (first_send == ops.size()) {
                fail("round " + std::to_string(i) + ": the echo did not leave in the held pass");
            }
            if (i >= k_warm && first_ack < first_send) {
                fail("round " + std::to_string(i) + ": the ACK left ahead of the reply");
            }
            replies_first += i >= k_warm && first_ack != ops.size();

            // A: a held pass takes the echo in at once and its ACK (for the ping) later.
            int recvs = 0, sends = 0;
            bool deferred = false;
            while (recvs == 0 || sends == 0) {
                na.w().poll(clk.now_ns(), false);
                const cq_count in_pass = drain(ea);
                na.w().send_held(clk.now_ns());
                const cq_count after = drain(ea);
                if (in_pass.recvs != 0 && in_pass.sends == 0 && after.sends != 0) {
                    deferred = true;
                }
                recvs += in_pass.recvs + after.recvs;
                sends += in_pass.sends + after.sends;
                if (clk.now_ns() > deadline) {
                    fail("round " + std::to_string(i) + ": no echo or no send completion");
                }
            }
            acks_later += i >= k_warm && deferred;
            if (std::memcmp(ba_buf.data(), ba_buf.data() + k_msg, k_msg) != 0) {
                fail("round " + std::to_string(i) + ": the echo's bytes differ");
            }
        }
        std::printf("held_pass: %d rounds verified; reply ahead of its ACK in %d, ACK taken in "
                    "after the reply in %d\n", k_rounds, replies_first, acks_later);
        // Every round after the first ones sends the reply first and takes the ACK in
        // after it (the pass's timers run after that ACK, so none pre-empts it).
        if (replies_first != k_rounds - k_warm || acks_later != k_rounds - k_warm) {
            fail("the held pass did not reorder: see the counts above");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "held_pass: %s\n", e.what());
        return 1;
    }
    return 0;
}
