// Ethdev port bring-up for any PMD (real NICs, net_memif, net_ring, net_af_packet):
// queues, offloads when offered, and the mbuf pool the datapath allocates from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dpdk/encap.hpp"
#include "dpdk/net_headers.hpp"

struct rte_mempool;

namespace metaroce::dpdk {

struct port_params {
    uint16_t rx_queues = 1;
    uint16_t tx_queues = 1;
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    uint32_t max_frame = 0;          // largest frame we send; the MTU is raised when allowed
    bool udp_checksum_software = false; // without offload: compute (true) or send 0 (false)
    uint32_t peer_wait_ms = 5000;    // a memif client waits this long for its server to listen
    bool zero_copy_tx = true;        // chained frames (extbuf.hpp) when the port takes them
};

// What the port turned out to offer.
struct port_caps {
    uint16_t port_id = 0;
    std::string name;                // device name, e.g. net_memif0
    std::string driver;
    mac_addr mac{};
    tx_csum_mode tx_csum;
    bool rx_ip_csum = false;         // the port flags IPv4 checksums good/bad
    bool rx_udp_csum = false;
    bool fast_free = false;
    bool multi_seg_tx = false;       // zero-copy sends: RTE_ETH_TX_OFFLOAD_MULTI_SEGS enabled
    std::string zero_copy_note;      // why multi_seg_tx is off, when it is
    bool mtu_raised = false;         // false: the PMD kept a smaller MTU (memif/ring ignore it)
    uint16_t rx_queues = 0;
    uint16_t tx_queues = 0;
    int socket = 0;
};

// Configures and starts a port; throws dpdk_error with the step that failed.
port_caps setup_port(uint16_t port_id, const port_params& p, rte_mempool* pool);
void stop_port(uint16_t port_id) noexcept;
uint16_t port_count() noexcept;
bool port_link_up(uint16_t port_id) noexcept;

// Data room an mbuf needs for a whole frame of `max_frame` bytes (plus headroom).
uint16_t mbuf_data_room(uint32_t max_frame) noexcept;
rte_mempool* make_mbuf_pool(const std::string& name, uint32_t mbufs, uint32_t max_frame,
                            int socket);

std::string format_mac(const mac_addr& m);
// "aa:bb:cc:dd:ee:ff" -> mac; false when malformed.
bool parse_mac(const std::string& s, mac_addr& out);
std::string format_ipv4(uint32_t host_order);
// Dotted quad -> host order; false when malformed.
bool parse_ipv4(const std::string& s, uint32_t& out);

} // namespace metaroce::dpdk
