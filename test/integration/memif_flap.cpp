// A memif peer that keeps leaving: it fills the link with frames as fast as the
// other process can take them, then stops its port (net_memif closes the control
// channel: the other side's interrupt thread disconnects and unmaps the shared
// rings) while the other side is still draining them, starts it again, waits for
// the link and repeats. A process that polls a memif port while its peer leaves
// must survive every round (issue 8, "Server exit crashes").
//   memif_flap EAL-ARGS -- FLAPS [FRAME_BYTES] [HOLD_MS]
// The port is 0 (one --vdev=net_memif0,role=client,...). Exit 0 when the link came
// back after every flap; 1 when it did not (the other side died or hung).
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "dpdk/eal.hpp"
#include "dpdk/link_guard.hpp"
#include "dpdk/port.hpp"

using namespace metaroce;

namespace {

constexpr uint16_t k_port = 0;
constexpr uint16_t k_burst = 32;

// Frames of a local experimental EtherType: the other side's parser drops them after
// net_memif has copied them, which is the work that must not race the disconnect.
uint64_t blast(rte_mempool* pool, uint16_t frame, uint64_t for_ms)
{
    const uint64_t until = rte_get_timer_cycles() + rte_get_timer_hz() * for_ms / 1000;
    uint64_t sent = 0;
    std::array<rte_mbuf*, k_burst> pkts;
    while (rte_get_timer_cycles() < until) {
        if (rte_pktmbuf_alloc_bulk(pool, pkts.data(), k_burst) != 0) {
            continue;
        }
        for (rte_mbuf* m : pkts) {
            uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
            std::memset(p, 0xff, 12);
            p[12] = 0x88;
            p[13] = 0xb5;
            m->data_len = frame;
            m->pkt_len = frame;
        }
        const uint16_t took = dpdk::link_guard::tx_burst(k_port, 0, pkts.data(), k_burst);
        rte_pktmbuf_free_bulk(pkts.data() + took, k_burst - took);
        sent += took;
    }
    return sent;
}

// Our own stop and start, like port.cpp's, keep clear of memif's handling of the
// other side on this process's interrupt thread: only the other process is tested.
int start() noexcept
{
    const dpdk::link_guard::section in(dpdk::link_guard::section::wait);
    return rte_eth_dev_start(k_port);
}

void stop() noexcept
{
    const dpdk::link_guard::section in(dpdk::link_guard::section::wait);
    rte_eth_dev_stop(k_port);
}

// Restarts the port until the link is back; false after `ms`.
bool reconnect(uint32_t ms)
{
    const uint64_t hz = rte_get_timer_hz();
    const uint64_t until = rte_get_timer_cycles() + hz * ms / 1000;
    while (rte_get_timer_cycles() < until) {
        if (start() == 0) {
            const uint64_t retry = rte_get_timer_cycles() + hz / 2;
            while (rte_get_timer_cycles() < retry) {
                if (dpdk::port_link_up(k_port)) {
                    return true;
                }
                rte_delay_us_sleep(500);
            }
            stop();
        }
        rte_delay_us_sleep(10'000);
    }
    return false;
}

} // namespace

int main(int argc, char** argv)
{
    int rc = 0;
    try {
        const int used = dpdk::eal_init(argc, argv);
        argc -= used; // argv now holds what follows "--"
        argv += used;
        if (argc < 1) {
            std::fprintf(stderr, "usage: memif_flap EAL-ARGS -- FLAPS [FRAME_BYTES] [HOLD_MS]\n");
            dpdk::eal_cleanup();
            return 2;
        }
        const int flaps = std::atoi(argv[0]);
        const uint16_t frame = uint16_t(argc > 1 ? std::atoi(argv[1]) : 4000);
        const uint64_t hold_ms = argc > 2 ? uint64_t(std::atoi(argv[2])) : 20;
        rte_mempool* pool = dpdk::make_mbuf_pool("flap_pool", 4095, frame, 0);
        dpdk::port_params pp;
        pp.max_frame = frame;
        dpdk::setup_port(k_port, pp, pool); // waits for the server and the link
        uint64_t frames = 0;
        for (int i = 0; i < flaps; ++i) {
            frames += blast(pool, frame, hold_ms);
            stop(); // the other side is mid-drain of a full ring
            if (!reconnect(5000)) {
                std::fprintf(stderr, "memif_flap: the link did not come back after flap %d "
                             "(did the other process die?)\n", i + 1);
                rc = 1;
                break;
            }
        }
        if (rc == 0) {
            // Leave for good the same way: with the other side still draining.
            frames += blast(pool, frame, hold_ms);
            std::printf("memif_flap: %d flaps, %llu frames sent, the link came back every time\n",
                        flaps, static_cast<unsigned long long>(frames));
        }
        dpdk::stop_port(k_port);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "memif_flap: %s\n", e.what());
        rc = 1;
    }
    dpdk::eal_cleanup();
    return rc;
}
