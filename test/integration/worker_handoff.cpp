// Several workers per node, software hand-off: two nodes of 2 workers each in one
// process, joined by net_ring ports whose queues are crossed (A's TX queue q feeds B's
// RX queue 1-q and back), so every frame lands on the queue of the worker that does
// not own its address and must reach the owner through its inbox ring. Worker k of A
// writes, sends and reads 64 x 64 KiB with worker k of B (both pairs at once, driven by
// one thread); every byte is checked, and so are the hand-off counters. net_ring takes
// no rte_flow rule: the node must say so (flow_steered() false). Exit 0 on success.
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/node.hpp"
#include "engines/data_pattern.hpp"

using namespace metaroce;

namespace {

constexpr uint32_t k_a = 0x0a000001;
constexpr uint32_t k_b = 0x0a000002;
constexpr uint32_t k_msg = 65536;
constexpr uint32_t k_msgs = 64;
constexpr uint16_t k_workers = 2;

// Two 2-queue ports, queues crossed: A's TX q -> B's RX 1-q, B's TX q -> A's RX 1-q.
// Straight (MR_HANDOFF_STRAIGHT=1, for timing the hand-off): q -> q, no hand-off.
std::pair<uint16_t, uint16_t> crossed_pair(bool straight)
{
    std::array<rte_ring*, k_workers> ab{};
    std::array<rte_ring*, k_workers> ba{};
    for (uint16_t q = 0; q < k_workers; ++q) {
        ab[q] = rte_ring_create(("hoab" + std::to_string(q)).c_str(), 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
        ba[q] = rte_ring_create(("hoba" + std::to_string(q)).c_str(), 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (ab[q] == nullptr || ba[q] == nullptr) {
            throw std::runtime_error("rte_ring_create failed");
        }
    }
    // rx of one side: the other side's tx rings in the opposite order.
    std::array<rte_ring*, k_workers> a_rx{ba[straight ? 0 : 1], ba[straight ? 1 : 0]};
    std::array<rte_ring*, k_workers> b_rx{ab[straight ? 0 : 1], ab[straight ? 1 : 0]};
    const int pa = rte_eth_from_rings("hoa", a_rx.data(), k_workers, ab.data(), k_workers, 0);
    const int pb = rte_eth_from_rings("hob", b_rx.data(), k_workers, ba.data(), k_workers, 0);
    if (pa < 0 || pb < 0) {
        throw std::runtime_error("rte_eth_from_rings failed");
    }
    return {uint16_t(pa), uint16_t(pb)};
}

// One connection: worker k of A to worker k of B.
struct lane {
    dpdk::worker& wa;
    dpdk::worker& wb;
    dpdk::eal_buffer abuf, bbuf;
    memory_region amr{}, bmr{};
    conn_id c = k_no_conn;
    std::vector<completion> done;
};

void pump(dpdk::node& na, dpdk::node& nb, std::vector<lane>& lanes, dpdk::tsc_clock& clk,
          const std::function<bool()>& until, const char* what)
{
    const uint64_t deadline = clk.now_ns() + 20'000'000'000ull;
    std::array<completion, 64> cq;
    std::array<conn_event, 8> ev;
    while (!until()) {
        for (dpdk::node* n : {&na, &nb}) {
            for (size_t k = 0; k < n->workers(); ++k) {
                dpdk::worker& w = n->w(k);
                w.poll(clk.now_ns());
                w.ep().poll_events(ev);
                const size_t got = w.ep().poll_cq(cq);
                for (size_t i = 0; i < got; ++i) {
                    if (cq[i].status != wc_status::success) {
                        throw std::runtime_error(std::string(what) + ": completion " +
                                                 std::string(to_string(cq[i].status)));
                    }
                    if (n == &na) {
                        lanes[k].done.push_back(cq[i]);
                    }
                }
            }
        }
        if (clk.now_ns() > deadline) {
            throw std::runtime_error(std::string("timed out: ") + what);
        }
    }
}

void post_all(lane& l, wr_opcode op, dpdk::tsc_clock& clk, const char* name)
{
    if (op == wr_opcode::send) {
        const std::vector<conn_id> bconns = l.wb.ep().connections();
        for (uint32_t i = 0; i < k_msgs; ++i) {
            recv_wr r;
            r.wr_id = i;
            r.local = sge{l.bmr.va + uint64_t(i) * k_msg, k_msg, l.bmr.lkey};
            if (l.wb.ep().post_recv(bconns.at(0), 0, r) != post_result::ok) {
                throw std::runtime_error("post_recv failed");
            }
        }
    }
    for (uint32_t i = 0; i < k_msgs; ++i) {
        send_wr wr;
        wr.wr_id = i;
        wr.op = op;
        wr.local = sge{l.amr.va + uint64_t(i) * k_msg, k_msg, l.amr.lkey};
        wr.remote_va = l.bmr.va + uint64_t(i) * k_msg;
        wr.rkey = l.bmr.rkey;
        if (const post_result r = l.wa.ep().post_send(l.c, wr, clk.now_ns()); r != post_result::ok) {
            throw std::runtime_error(std::string(name) + ": post_send " + std::string(to_string(r)));
        }
    }
}

// The hand-off's own cost on one core: what a worker does per frame it passes on
// (rte_ring_mp_enqueue of the mbuf) and the owner per frame it takes (a share of an
// rte_ring_sc_dequeue_burst of 32), as worker.cpp does them. Cross-core, add the cache
// lines of the mbuf and the frame moving to the owner's core.
double ring_ns_per_frame(rte_ring* r)
{
    constexpr int k_rounds = 20000;
    std::array<void*, 32> objs{};
    const dpdk::tsc_clock clk;
    const uint64_t t0 = clk.now_ns();
    for (int i = 0; i < k_rounds; ++i) {
        for (void*& o : objs) {
            if (rte_ring_mp_enqueue(r, &o) != 0) {
                throw std::runtime_error("ring full");
            }
        }
        std::array<void*, 32> out{};
        if (rte_ring_sc_dequeue_burst(r, out.data(), 32, nullptr) != 32) {
            throw std::runtime_error("ring short");
        }
    }
    return double(clk.now_ns() - t0) / (double(k_rounds) * 32);
}

} // namespace

int main(int argc, char** argv)
{
    try {
        dpdk::eal_init(argc, argv);
        const char* env = std::getenv("MR_HANDOFF_STRAIGHT");
        const bool straight = env != nullptr && std::string(env) == "1";
        const auto ports = crossed_pair(straight);
        dpdk::node_params pa;
        pa.node_addr = k_a;
        pa.ports = {ports.first};
        pa.accept_incoming = false;
        pa.mbufs = 4095;
        pa.seed = 11;
        pa.workers = k_workers;
        dpdk::node_params pb = pa;
        pb.node_addr = k_b;
        pb.ports = {ports.second};
        pb.accept_incoming = true;
        pb.seed = 22;
        dpdk::node na(pa);
        dpdk::node nb(pb);
        if (na.workers() != k_workers || na.flow_steered().at(0) || nb.flow_steered().at(0)) {
            throw std::runtime_error("expected 2 workers and no rte_flow steering on net_ring");
        }
        const uint64_t len = uint64_t(k_msg) * k_msgs;
        const uint32_t acc = access::local_write | access::remote_write | access::remote_read;
        dpdk::tsc_clock clk;
        std::vector<lane> lanes;
        for (uint16_t k = 0; k < k_workers; ++k) {
            lanes.push_back(lane{na.w(k), nb.w(k), dpdk::eal_buffer("a", len, -1),
                                 dpdk::eal_buffer("b", len, -1), {}, {}, k_no_conn, {}});
        }
        for (uint16_t k = 0; k < k_workers; ++k) {
            lane& l = lanes[k];
            if (l.wa.node() != dpdk::worker_addr(k_a, k) || l.wb.node() != dpdk::worker_addr(k_b, k)) {
                throw std::runtime_error("worker " + std::to_string(k) + " has the wrong address");
            }
            l.amr = *l.wa.ep().memory().register_region(l.abuf.data(), len, acc);
            l.bmr = *l.wb.ep().memory().register_region(l.bbuf.data(), len, acc);
            l.c = l.wa.ep().connect(dpdk::worker_addr(k_b, k), clk.now_ns());
        }
        pump(na, nb, lanes, clk, [&] {
            for (lane& l : lanes) {
                if (l.wb.ep().connections().empty() || l.wa.ep().inspect(l.c)->state != conn_state::established) {
                    return false;
                }
            }
            return true;
        }, "connect");
        const std::array<std::pair<wr_opcode, const char*>, 3> ops{
            {{wr_opcode::write, "write"}, {wr_opcode::send, "send"}, {wr_opcode::read, "read"}}};
        uint8_t salt = 1;
        const uint64_t t0 = clk.now_ns();
        for (const auto& [op, name] : ops) {
            for (lane& l : lanes) {
                uint8_t* src = op == wr_opcode::read ? l.bbuf.data() : l.abuf.data();
                uint8_t* dst = op == wr_opcode::read ? l.abuf.data() : l.bbuf.data();
                for (uint64_t i = 0; i < len; ++i) {
                    src[i] = engines::pattern_byte(i, uint8_t(salt + (&l - lanes.data())));
                }
                std::memset(dst, 0, len);
                l.done.clear();
                post_all(l, op, clk, name);
            }
            pump(na, nb, lanes, clk, [&] {
                for (const lane& l : lanes) {
                    if (l.done.size() != k_msgs) {
                        return false;
                    }
                }
                return true;
            }, name);
            for (lane& l : lanes) {
                if (std::memcmp(l.abuf.data(), l.bbuf.data(), len) != 0) {
                    throw std::runtime_error(std::string(name) + ": data differs on lane " +
                                             std::to_string(&l - lanes.data()));
                }
            }
            salt = uint8_t(salt + 2);
            std::printf("%s: 2 workers x %u x %u bytes verified\n", name, k_msgs, k_msg);
        }
        const uint64_t t1 = clk.now_ns();
        uint64_t frames = 0;
        for (dpdk::node* n : {&na, &nb}) {
            for (size_t k = 0; k < n->workers(); ++k) {
                frames += n->w(k).counters().tx_frames;
            }
        }
        rte_ring* bench = rte_ring_create("hobench", dpdk::k_inbox_slots, 0, RING_F_SC_DEQ);
        if (bench == nullptr) {
            throw std::runtime_error("rte_ring_create failed");
        }
        std::printf("hand-off ring, one core: %.1f ns per frame (enqueue + dequeue)\n", ring_ns_per_frame(bench));
        rte_ring_free(bench);
        std::printf("%s: %llu frames in %.1f ms, %.0f ns per frame (one thread, all workers)\n",
                    straight ? "straight" : "crossed", static_cast<unsigned long long>(frames),
                    double(t1 - t0) / 1e6, double(t1 - t0) / double(frames));
        for (dpdk::node* n : {&na, &nb}) {
            for (size_t k = 0; k < n->workers() && !straight; ++k) {
                const auto& c = n->w(k).counters();
                std::printf("node %c worker %zu: rx %llu, hand-off in %llu out %llu drops %llu, not ours %llu\n",
                            n == &na ? 'A' : 'B', k, static_cast<unsigned long long>(c.rx_frames),
                            static_cast<unsigned long long>(c.handoff_in),
                            static_cast<unsigned long long>(c.handoff_out),
                            static_cast<unsigned long long>(c.handoff_drops),
                            static_cast<unsigned long long>(c.rx_not_ours));
                // Crossed queues: everything a worker owns came by hand-off.
                // rx_frames counts at the polling worker only (once), so it equals handoff_out.
                if (c.handoff_in == 0 || c.handoff_out == 0 || c.handoff_drops != 0 || c.rx_not_ours != 0 ||
                    c.rx_frames != c.handoff_out) {
                    throw std::runtime_error("hand-off counters not as expected");
                }
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "worker_handoff: %s\n", e.what());
        return 1;
    }
    return 0;
}
