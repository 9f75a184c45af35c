// In-process loopback: two nodes in one process joined by net_ring ports (one
// cross-connected ring pair per plane), driven by one thread. Runs WRITE, SEND
// and READ over two planes and checks every byte. Exit 0 on success.

#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/node.hpp"
#include "engines/data_pattern.hpp"
#include "ring_link.hpp"

using namespace metaroce;

namespace {

constexpr uint32_t k_a = 0x0a000001;
constexpr uint32_t k_b = 0x0a000002;
constexpr uint32_t k_msg = 65536;
constexpr uint32_t k_msgs = 64;

struct side {
    dpdk::node& n;
    dpdk::eal_buffer buf;
    memory_region mr{};
    std::vector<completion> done;
};

void pump(side& a, side& b, dpdk::tsc_clock& clk, const std::function<bool()>& until,
          const char* what)
{
    const uint64_t deadline = clk.now_ns() + 20'000'000'000ull;
    std::array<completion, 64> cq;
    std::array<conn_event, 8> ev;
    while (!until()) {
        const std::array<side*, 2> sides{&a, &b};
        for (side* s : sides) {
            s->n.w().poll(clk.now_ns());
            s->n.w().ep().poll_events(ev);
            const size_t k = s->n.w().ep().poll_cq(cq);
            for (size_t i = 0; i < k; ++i) {
                if (cq[i].status != wc_status::success) {
                    throw std::runtime_error(std::string(what) + ": completion " +
                                             std::string(to_string(cq[i].status)));
                }
                s->done.push_back(cq[i]);
            }
        }
        if (clk.now_ns() > deadline) {
            throw std::runtime_error(std::string("timed out: ") + what);
        }
    }
}

} // namespace

int main(int argc, char** argv)
{
    try {
        dpdk::eal_init(argc, argv);
        const test::ring_link p0 = test::make_ring_link("lb0", 4096);
        const test::ring_link p1 = test::make_ring_link("lb1", 4096);
        dpdk::node_params pa;
        pa.node_addr = k_a;
        pa.ports = {p0.a, p1.a};
        pa.accept_incoming = false;
        pa.mbufs = 4095;
        pa.seed = 11;
        dpdk::node_params pb = pa;
        pb.node_addr = k_b;
        pb.ports = {p0.b, p1.b};
        pb.accept_incoming = true;
        pb.seed = 22;
        dpdk::node na(pa);
        dpdk::node nb(pb);
        const uint64_t len = uint64_t(k_msg) * k_msgs;
        side a{na, dpdk::eal_buffer("a", len, -1), {}, {}};
        side b{nb, dpdk::eal_buffer("b", len, -1), {}, {}};
        const uint32_t acc = access::local_write | access::remote_write | access::remote_read;
        a.mr = *na.w().ep().memory().register_region(a.buf.data(), len, acc);
        b.mr = *nb.w().ep().memory().register_region(b.buf.data(), len, acc);
        dpdk::tsc_clock clk;

        const conn_id c = na.w().ep().connect(k_b, clk.now_ns());
        auto run = [&](wr_opcode op, uint8_t salt, const char* name) {
            side& src = op == wr_opcode::read ? b : a;
            side& dst = op == wr_opcode::read ? a : b;
            for (uint64_t k = 0; k < len; ++k) {
                src.buf.data()[k] = engines::pattern_byte(k, salt);
            }
            std::memset(dst.buf.data(), 0, len);
            a.done.clear();
            b.done.clear();
            std::vector<conn_id> bconns = nb.w().ep().connections();
            if (op == wr_opcode::send) {
                for (uint32_t i = 0; i < k_msgs; ++i) {
                    recv_wr r;
                    r.wr_id = i;
                    r.local = sge{b.mr.va + uint64_t(i) * k_msg, k_msg, b.mr.lkey};
                    if (nb.w().ep().post_recv(bconns.at(0), 0, r) != post_result::ok) {
                        throw std::runtime_error("post_recv failed");
                    }
                }
            }
            for (uint32_t i = 0; i < k_msgs; ++i) {
                send_wr wr;
                wr.wr_id = i;
                wr.op = op;
                wr.local = sge{a.mr.va + uint64_t(i) * k_msg, k_msg, a.mr.lkey};
                wr.remote_va = b.mr.va + uint64_t(i) * k_msg;
                wr.rkey = b.mr.rkey;
                const post_result r = na.w().ep().post_send(c, wr, clk.now_ns());
                if (r != post_result::ok) {
                    throw std::runtime_error(std::string(name) + ": post_send " +
                                             std::string(to_string(r)));
                }
            }
            pump(a, b, clk, [&] { return a.done.size() == k_msgs; }, name);
            if (std::memcmp(src.buf.data(), dst.buf.data(), len) != 0) {
                throw std::runtime_error(std::string(name) + ": data differs");
            }
            std::printf("%s: %u x %u bytes over 2 planes verified\n", name, k_msgs, k_msg);
        };
        pump(a, b, clk, [&] { return !nb.w().ep().connections().empty() &&
                                     na.w().ep().inspect(c)->state == conn_state::established; },
             "connect");
        run(wr_opcode::write, 1, "write");
        run(wr_opcode::send, 2, "send");
        run(wr_opcode::read, 3, "read");
        const auto& wa = na.w().counters();
        std::printf("node A: tx %llu frames, rx %llu frames, %llu rx drops\n",
                    static_cast<unsigned long long>(wa.tx_frames),
                    static_cast<unsigned long long>(wa.rx_frames),
                    static_cast<unsigned long long>(wa.rx_drops_total()));
        uint64_t planes_used = 0;
        const auto info = na.w().ep().inspect(c);
        for (const auto& p : info->path) {
            planes_used |= 1ull << p.plane;
        }
        if (planes_used != 3) {
            throw std::runtime_error("paths did not spread over both planes");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ring_loopback: %s\n", e.what());
        return 1;
    }
    return 0;
}
