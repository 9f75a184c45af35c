// Keeps net_memif's handling of its peer off the datapath's bursts (issue 8).
//
// net_memif (DPDK 22.11) runs its control channel on the EAL interrupt thread. When
// the peer leaves (its DISCONNECT message, or EOF when it exits or dies),
// memif_intr_handler -> memif_disconnect clears the CONNECTED flag, closes the queue
// eventfds and memif_free_regions() munmaps the shared rings and buffers and frees
// the region records: no lock, no barrier, and no ethdev event (the PMD never calls
// rte_eth_dev_callback_process, so no LSC callback runs, before or after). Its
// rx/tx bursts test CONNECTED once on entry and then walk the rings, so a burst in
// flight on an lcore reads unmapped memory: SIGSEGV. Checking the link first only
// narrows that window.
//
// The guard closes it by excluding the interrupt thread itself. While a memif port
// is open, that thread spends its idle time parked in our own interrupt callback
// (on an eventfd we keep readable), and bursts run only in a section, entered only
// while it is parked. Parked, it sleeps on its own epoll set (less our eventfd):
// when memif's socket (or any other source) becomes ready, it marks the gate
// closed, waits until no section is open, and returns to its epoll loop, where it
// runs those handlers before it is back in our callback and reopens. No memif
// handler can run while a section is open, and a section opened afterwards sees
// CONNECTED cleared (the reopening is a release, the entering an acquire). The
// cost: lcores skip their I/O while the thread is out, i.e. only when the link
// changes (and every k_watch_ms, a safety net). With no memif port the gate is off
// and sections always enter.
#pragma once

#include <cstdint>

struct rte_mbuf;

namespace metaroce::dpdk::link_guard {

// The parked thread comes out at least this often; every k_park_ms instead when its
// epoll set cannot be found (/proc/self/fdinfo).
inline constexpr unsigned k_watch_ms = 100;
inline constexpr unsigned k_park_ms = 1;

// Port bring-up and close (main thread): the first memif port engages the gate,
// closing the last one releases the interrupt thread. Other PMDs are not counted.
void port_opened(uint16_t port_id, bool memif);
void port_closed(uint16_t port_id) noexcept;
bool engaged() noexcept;

// Sections do not nest. try_enter: false while the interrupt thread is out (skip
// the I/O and come back); enter: waits for the gate (control paths, flushes).
bool try_enter() noexcept;
void enter() noexcept;
void leave() noexcept;

class section {
public:
    enum mode { try_once, wait };
    explicit section(mode m = try_once) noexcept : in_(m == wait ? (enter(), true) : try_enter()) {}
    ~section()
    {
        if (in_) {
            leave();
        }
    }
    section(const section&) = delete;
    section& operator=(const section&) = delete;
    explicit operator bool() const noexcept { return in_; }

private:
    bool in_;
};

// One burst in its own section; 0 while the gate is closed (for loops that call the
// PMD directly: metaroce-perf --raw).
uint16_t rx_burst(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n) noexcept;
uint16_t tx_burst(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n) noexcept;

} // namespace metaroce::dpdk::link_guard
