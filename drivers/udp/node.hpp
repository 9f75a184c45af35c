// The kernel-UDP reference backend: one metaroce node over plain UDP sockets, the
// same wire as the DPDK path (spec 2) minus the Ethernet/IPv4 headers the kernel
// writes. Runs anywhere (containers, laptops, CI), unprivileged.
//
//   plane p: one receive socket bound to plane_addrs[p]:port (4796), IP_RECVTOS for CE,
//            UDP_GRO; source-port sockets bound to plane_addrs[p]:<sport>, lazily, IP_TOS
//            ECT(0);
//   poll():  recvmmsg per plane (GRO runs split back into datagrams) -> on_packet,
//            timers, poll_tx -> sendmmsg per socket, equal-length runs as one UDP_SEGMENT
//            send (the shared loop of drivers/common/endpoint_loop.hpp).
// GSO and GRO only batch: the datagrams on the wire are the same (spec 2).
//
// Peers' plane addresses: from `peers` if listed there, else laid out like ours
// (peer plane p = peer node + (plane_addrs[p] - plane_addrs[0])), so 127.0.0.1/127.0.0.3
// talks to 127.0.0.2/127.0.0.4, and 10.0.0.1/10.0.1.1 to 10.0.0.2/10.0.1.2 as on DPDK.
//
// Not thread-safe: one thread at a time calls poll() and the endpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "metaroce/config.hpp"
#include "metaroce/endpoint.hpp"
#include "udp/udp_counters.hpp"

namespace metaroce::udp {

// The core's defaults with timing for kernel sockets: a process behind a socket can be
// descheduled for milliseconds (more on a loaded host), which the DPDK-tuned 100 us
// minimum RTO and 100 us delay mark read as loss and congestion. Measured on loopback
// (1 GiB WRITE, 2 shared cores): 100 us/100 us gives ~1.4 Gb/s with 3% spurious
// retransmits; 5 ms/5 ms ~2.2 Gb/s with none, and still recovers 1% loss by SACK.
// Tail probes wait at least 1 ms: `ib_send_lat` over loopback probed ~5 % of its
// messages after 2 RTTs (~60 us), four in five of them needlessly.
transport_config kernel_udp_transport();

struct node_params {
    std::vector<uint32_t> plane_addrs;   // host order, one per plane; [0] is the node address
    uint16_t port = 4796;                // destination/listen port (tests may use another)
    transport_config transport = kernel_udp_transport(); // .planes = plane_addrs.size()
    bool accept_incoming = true;
    uint64_t seed = 0;                   // 0: getrandom
    uint64_t inbound_capacity_mbps = 0;  // receiver rate hints (spec 6.4); 0: none
    uint32_t max_connections = 1024;
    uint32_t record_chunks = 4096;       // endpoint_config::record_chunks
    uint32_t cq_depth = 65536;
    uint32_t max_mrs = 4096;
    // Peers whose plane addresses do not follow our layout: each entry one peer's
    // addresses, [0] its node address, one per plane.
    std::vector<std::vector<uint32_t>> peers;
    // Distinct UDP source ports per plane for data: the core's path entropy e
    // (49152..65535) is sent from port 49152 + (e - 49152) % sport_slots (16384: exactly e). A port another
    // process holds is replaced by the next free one in its residue class. Fewer slots
    // batch better (one socket per sendmmsg/GSO run; 1 slot: ~1.5x the loopback rate)
    // but give an ECMP fabric fewer routes; exact entropy binds a socket per reroute.
    // Replies (ACK, NAK, ACCEPT, COOKIE, CLOSE_ACK, PROBE_ACK) leave from exactly e.
    uint16_t sport_slots = 64;
    int socket_buffer_bytes = 4 << 20;   // SO_RCVBUF/SO_SNDBUF (forced when permitted)
    uint16_t rx_burst = 32;              // datagrams per recvmmsg
    // Packets pulled from the core per poll (each with a buffer of max packet size): a
    // larger batch gives longer GSO runs per socket; loopback 1 GiB WRITE ~6 Gb/s at 64,
    // ~8.7 at 256, ~10.5 at 1024.
    uint16_t tx_budget = 256;
    bool gso = true;                     // UDP_SEGMENT sends of equal-length runs
    bool gro = true;                     // receive coalesced runs (UDP_GRO), split here
    double test_drop_rate = 0;           // test-only loss injection on receive (0..1)
    uint64_t test_drop_seed = 1;
};

class node {
public:
    // Throws std::runtime_error with a precise message (address in use, not local, ...).
    explicit node(const node_params& p);
    ~node();
    node(const node&) = delete;
    node& operator=(const node&) = delete;

    endpoint& ep() noexcept;
    const endpoint& ep() const noexcept;
    const node_params& params() const noexcept;

    // One pass of the shared endpoint loop; true if it did work. A progress thread
    // polls until it has been idle for a while (a few hundred passes: waking from a
    // sleep costs tens of microseconds, which halved loopback throughput when every
    // idle pass slept), then calls wait().
    bool poll(uint64_t now_ns);
    // Readable while a datagram waits on any plane (an epoll fd): a progress thread
    // sleeps on it, with ep().next_timer() as its timeout.
    int wait_fd() const noexcept;
    // Sleeps until a datagram arrives, the next timer is due or max_ns passed; returns
    // at once if datagrams are still waiting to be sent.
    void wait(uint64_t max_ns);
    static uint64_t now_ns() noexcept; // CLOCK_MONOTONIC

    const udp_counters& counters() const noexcept;
    void clear_counters() noexcept;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

// Parses dotted IPv4 ("127.0.0.1") into host order; throws std::runtime_error.
uint32_t parse_ipv4(const char* s);

} // namespace metaroce::udp
