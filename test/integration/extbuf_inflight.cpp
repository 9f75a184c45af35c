// Zero-copy frames hold registered memory until their port lets go of them: a
// worker's tx_deregister must wait for that, and say so when it does not happen.
// Two workers over a net_ring pair (the ring keeps the mbufs themselves until the
// other port reads them); the receiving port is not polled, so frames sent in place
// from a heap buffer (rte_extmem_register path) stay in flight until this test drains
// the ring from another thread. Exit 0 on success.
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/node.hpp"
#include "dpdk/port.hpp"
#include "dpdk/worker.hpp"
#include "ring_link.hpp"

using namespace metaroce;

namespace {

constexpr uint32_t k_a = 0x0a000001;
constexpr uint32_t k_b = 0x0a000002;

void require(bool ok, const std::string& what)
{
    if (!ok) {
        throw std::runtime_error(what);
    }
}

dpdk::worker_config config(uint32_t addr, const dpdk::port_caps& c, rte_mempool* pool, bool accept)
{
    dpdk::worker_config wc;
    wc.ep.local_addr = addr;
    wc.ep.accept_incoming = accept;
    wc.ep.seed = addr;
    wc.ep.frame_overhead_bytes = uint32_t(dpdk::k_wire_overhead);
    wc.ep.transport.planes = 1;
    dpdk::plane_port p;
    p.port_id = c.port_id;
    p.mac = c.mac;
    p.multi_seg = true; // net_ring takes chains (it is refused only for data delivery)
    wc.planes.push_back(p);
    wc.pool = pool;
    return wc;
}

size_t drain(uint16_t port)
{
    std::array<rte_mbuf*, 32> m;
    size_t total = 0;
    for (uint16_t n; (n = rte_eth_rx_burst(port, 0, m.data(), 32)) != 0;) {
        rte_pktmbuf_free_bulk(m.data(), n);
        total += n;
    }
    return total;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        dpdk::eal_init(argc, argv);
        const test::ring_link link = test::make_ring_link("zc", 4096);
        const uint32_t frame = dpdk::node::max_frame(transport_config{}.mtu);
        rte_mempool* pool = dpdk::make_mbuf_pool("zc_pool", 4095, frame, 0);
        dpdk::port_params pp;
        pp.max_frame = frame;
        const dpdk::port_caps ca = dpdk::setup_port(link.a, pp, pool);
        const dpdk::port_caps cb = dpdk::setup_port(link.b, pp, pool);
        require(!ca.multi_seg_tx && !ca.zero_copy_note.empty(), "net_ring should be refused for zero copy");
        dpdk::worker a(config(k_a, ca, pool, false));
        dpdk::worker b(config(k_b, cb, pool, true));
        require(a.zero_copy(), "the worker should send in place");
        dpdk::tsc_clock clk;

        const conn_id c = a.ep().connect(k_b, clk.now_ns());
        for (uint64_t until = clk.now_ns() + 5'000'000'000ull;
             a.ep().inspect(c)->state != conn_state::established;) {
            require(clk.now_ns() < until, "connection not established");
            a.poll(clk.now_ns());
            b.poll(clk.now_ns());
        }
        std::vector<uint8_t> src(256 * 1024, 0x5a); // heap memory: not DPDK's
        const auto mr = a.ep().memory().register_region(src.data(), src.size(), access::local_write);
        require(mr.has_value(), "register_region failed");
        const auto& reg = a.tx_register(src.data(), src.size());
        std::printf("region: %s\n", reg.dma_note.c_str());
        send_wr w;
        w.op = wr_opcode::write;
        w.local = {mr->va, 65536, mr->lkey};
        w.remote_va = 0x1000; // never read: the peer does not poll
        w.rkey = 1;
        require(a.ep().post_send(c, w, clk.now_ns()) == post_result::ok, "post_send failed");
        for (uint64_t until = clk.now_ns() + 2'000'000; clk.now_ns() < until;) {
            a.poll(clk.now_ns()); // B is not polled: the frames stay in the ring
        }
        const uint32_t held = a.tx_in_flight(src.data());
        std::printf("in flight: %u frames sent in place (tx_zero_copy %llu)\n", held,
                    static_cast<unsigned long long>(a.counters().tx_zero_copy));
        require(held > 0 && a.counters().tx_zero_copy >= held, "nothing in flight from the region");
        require(a.ep().memory().deregister(mr->lkey), "core deregister failed");

        // Nobody frees them: a bounded wait, then an error that says why.
        auto t0 = std::chrono::steady_clock::now();
        bool threw = false;
        try {
            a.tx_deregister(src.data(), 50'000'000);
        } catch (const dpdk::dpdk_error& e) {
            threw = true;
            std::printf("refused as expected: %s\n", e.what());
            require(std::string(e.what()).find("still") != std::string::npos, "the error should say what is held");
        }
        auto waited = std::chrono::steady_clock::now() - t0;
        require(threw, "tx_deregister returned with frames in flight");
        require(waited >= std::chrono::milliseconds(45), "tx_deregister did not wait");
        require(a.tx_in_flight(src.data()) == held, "in-flight count changed by itself");

        // The peer port reads them 100 ms later: the wait ends then, and not before.
        std::thread reader([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            drain(link.b);
        });
        t0 = std::chrono::steady_clock::now();
        a.tx_deregister(src.data(), 5'000'000'000ull);
        waited = std::chrono::steady_clock::now() - t0;
        reader.join();
        require(a.tx_in_flight(src.data()) == 0, "frames still counted after deregistration");
        require(waited >= std::chrono::milliseconds(90), "tx_deregister returned before the frames were freed");
        std::printf("deregistered after %lld ms, once the %u frames were freed\n",
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()),
                    held);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "extbuf_inflight: %s\n", e.what());
        return 1;
    }
    return 0;
}
