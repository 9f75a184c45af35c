#include "dpdk/port.hpp"

#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "dpdk/diagnose.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/link_guard.hpp"

namespace metaroce::dpdk {

namespace {
// The value of key=... in a device's argument string ("a=1,bsize=8192"), or empty.
std::string devarg_value(const std::string& args, const std::string& key)
{
    size_t at = 0;
    while (at <= args.size()) {
        const size_t end = std::min(args.find(',', at), args.size());
        const std::string kv = args.substr(at, end - at);
        if (kv.compare(0, key.size() + 1, key + "=") == 0) {
            return kv.substr(key.size() + 1);
        }
        at = end + 1;
    }
    return {};
}

void check(int rc, uint16_t port_id, const char* what)
{
    if (rc < 0) {
        throw dpdk_error("port " + std::to_string(port_id) + ": " + what + " failed: " +
                         rte_error_string(rc));
    }
}

// Start and stop touch what memif's peer handling changes on the interrupt thread:
// run them with that handling held off (link_guard.hpp).
int start_guarded(uint16_t port_id)
{
    const link_guard::section in(link_guard::section::wait);
    return rte_eth_dev_start(port_id);
}

void stop_guarded(uint16_t port_id)
{
    const link_guard::section in(link_guard::section::wait);
    rte_eth_dev_stop(port_id);
}

// A memif client starts only once its server listens (rte_eth_dev_start fails with
// EPERM until then): wait for it, bounded, as perftest's client retries its server.
// Retry at once when a listener shows up, else once a second (each failed try logs).
void start_port(uint16_t port_id, const std::string& name, uint32_t wait_ms)
{
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + std::chrono::milliseconds(wait_ms);
    char waited[32];
    std::snprintf(waited, sizeof waited, "%.1f s", wait_ms / 1000.0);
    bool told = false;
    int rc = start_guarded(port_id);
    for (auto last = clock::now(); rc != 0;) {
        const auto peer = memif_client_peer(port_id);
        if (!peer) {
            check(rc, port_id, "rte_eth_dev_start");
        }
        if (clock::now() >= until) {
            throw dpdk_error("port " + std::to_string(port_id) + " (" + name + "): " + peer->what +
                             " is not listening after " + waited +
                             "; start the server (its --vdev with role=server) first, on the same socket=");
        }
        if (!told) {
            std::fprintf(stderr, "%s: port %u (%s): waiting up to %s for %s to listen\n",
                         program_invocation_short_name, port_id, name.c_str(), waited, peer->what.c_str());
            told = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (memif_client_peer(port_id)->listening || clock::now() - last >= std::chrono::seconds(1) ||
            clock::now() >= until) {
            rc = start_guarded(port_id);
            last = clock::now();
        }
    }
    if (!memif_client_peer(port_id)) {
        return;
    }
    // A server drops a client that connects before its own port started (its socket
    // listens from EAL init on), and the client does not reconnect by itself: wait for
    // the link, restarting the port to try again.
    for (auto last = clock::now(); !port_link_up(port_id);) {
        if (clock::now() >= until) {
            throw dpdk_error("port " + std::to_string(port_id) + " (" + name + "): " +
                             memif_client_peer(port_id)->what + " listens, but the link did not come up in " +
                             waited + " (its port not started?)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (clock::now() - last >= std::chrono::milliseconds(500)) {
            stop_guarded(port_id);
            start_guarded(port_id);
            last = clock::now();
        }
    }
}
} // namespace

namespace {
// DPDK 22.11's net_memif corrupts frames that span its buffers (bsize, 2048 by default):
// eth_memif_tx sets MEMIF_DESC_FLAG_NEXT on a frame's first descriptor when it spills
// over but never clears it when that slot later carries a frame that fits, so the
// receiver joins unrelated frames; when the stale flag is on the last descriptor
// published, eth_memif_rx's uint16_t n_slots wraps below zero and it re-reads the whole
// ring over and over (millions of stale frames). Refuse frames that do not fit.
void check_memif_bsize(uint16_t port_id, const std::string& name, const rte_eth_dev_info& info,
                       uint32_t max_frame)
{
    if (info.driver_name == nullptr || std::string_view(info.driver_name) != "net_memif") {
        return;
    }
    const rte_devargs* da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
    const std::string bs = devarg_value(da != nullptr && da->args != nullptr ? da->args : "", "bsize");
    const uint32_t bsize = bs.empty() ? 2048 : uint32_t(std::strtoul(bs.c_str(), nullptr, 0));
    if (max_frame > bsize) {
        char msg[512];
        std::snprintf(msg, sizeof msg,
                      "port %u (%s): frames of up to %u bytes (the transport MTU's) do not fit net_memif's "
                      "%u-byte buffers (bsize%s); DPDK 22.11's memif corrupts and replays frames that span "
                      "buffers (a stale MEMIF_DESC_FLAG_NEXT): add bsize=8192 to its --vdev (both peers), "
                      "or lower the MTU",
                      port_id, name.c_str(), max_frame, bsize, bs.empty() ? ", the default" : "");
        throw dpdk_error(msg);
    }
}

// net_memif started with zero-copy=yes (a devarg: the port reports nothing of it).
bool memif_zero_copy(uint16_t port)
{
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) != 0 || info.driver_name == nullptr ||
        std::string_view(info.driver_name) != "net_memif" || info.device == nullptr) {
        return false;
    }
    const rte_devargs* da = rte_dev_devargs(info.device);
    const std::string args = da != nullptr && da->args != nullptr ? da->args : "";
    return ("," + args + ",").find(",zero-copy=yes,") != std::string::npos;
}

// Empty when the port can send chained zero-copy frames, else why not.
std::string zero_copy_refusal(uint16_t port_id, const rte_eth_dev_info& info, const port_params& p)
{
    if (!p.zero_copy_tx) {
        return "disabled (copy mode)";
    }
    if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) == 0) {
        return "the port does not take multi-segment frames (no RTE_ETH_TX_OFFLOAD_MULTI_SEGS)";
    }
    if (p.udp_checksum_software && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) == 0) {
        return "the UDP checksum is computed in software over a contiguous frame";
    }
    const std::string_view driver = info.driver_name != nullptr ? info.driver_name : "";
    if (driver == "net_ring") {
        // It hands the mbufs themselves to the peer port: the chain would arrive as one,
        // and the receiver reads only whole frames.
        return "net_ring passes chained mbufs on to its peer port as chains";
    }
    if (driver == "net_memif" && memif_zero_copy(port_id)) {
        // DPDK 22.11's memif zero-copy TX takes a reference on each segment as it writes
        // its descriptor and returns 0, keeping them, when the rest of a chain does not
        // fit the ring; under chained write_bw traffic frames then arrived with bad IP
        // headers and 69 payload bytes differed (2 of 4 runs), while whole frames
        // verified in 5 of 5 runs (and this side's copy is still saved: the peer reads
        // the frame from our mbuf).
        return "net_memif zero-copy=yes mishandles chained frames (DPDK 22.11): frames are built whole";
    }
    return {};
}
} // namespace

uint16_t port_count() noexcept
{
    return rte_eth_dev_count_avail();
}

uint16_t mbuf_data_room(uint32_t max_frame) noexcept
{
    const uint32_t room = RTE_PKTMBUF_HEADROOM + ((max_frame + 63) & ~63u);
    return uint16_t(room < RTE_MBUF_DEFAULT_BUF_SIZE ? RTE_MBUF_DEFAULT_BUF_SIZE : room);
}

rte_mempool* make_mbuf_pool(const std::string& name, uint32_t mbufs, uint32_t max_frame,
                            int socket)
{
    rte_mempool* mp = rte_pktmbuf_pool_create(name.c_str(), mbufs, 256, 0,
                                              mbuf_data_room(max_frame), socket);
    if (mp == nullptr) {
        throw dpdk_error("cannot create mbuf pool " + name + " (" + std::to_string(mbufs) +
                         " mbufs of " + std::to_string(mbuf_data_room(max_frame)) +
                         " bytes): " + rte_error_string(rte_errno) + "; raise -m");
    }
    return mp;
}

port_caps setup_port(uint16_t port_id, const port_params& p, rte_mempool* pool)
{
    if (!rte_eth_dev_is_valid_port(port_id)) {
        const std::string why = explain_missing_devices();
        throw dpdk_error("port " + std::to_string(port_id) + " does not exist (" +
                         std::to_string(port_count()) + " ports found; " +
                         (why.empty() ? "add --vdev or -a" : why) + ")");
    }
    rte_eth_dev_info info{};
    check(rte_eth_dev_info_get(port_id, &info), port_id, "rte_eth_dev_info_get");

    port_caps caps;
    caps.port_id = port_id;
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port_id, name);
    caps.name = name;
    caps.driver = info.driver_name != nullptr ? info.driver_name : "";
    caps.socket = rte_eth_dev_socket_id(port_id) < 0 ? 0 : rte_eth_dev_socket_id(port_id);
    caps.rx_queues = std::min<uint16_t>(p.rx_queues, info.max_rx_queues);
    caps.tx_queues = std::min<uint16_t>(p.tx_queues, info.max_tx_queues);
    if (caps.rx_queues == 0 || caps.tx_queues == 0) {
        throw dpdk_error("port " + std::to_string(port_id) + " has no queues");
    }

    check_memif_bsize(port_id, caps.name, info, p.max_frame);

    rte_eth_conf conf{};
    const uint64_t tx_capa = info.tx_offload_capa;
    const uint64_t rx_capa = info.rx_offload_capa;
    if ((tx_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0) {
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
        caps.tx_csum.ip_offload = true;
    }
    if ((tx_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0) {
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
        caps.tx_csum.udp_offload = true;
    } else {
        caps.tx_csum.udp_software = p.udp_checksum_software;
    }
    // Zero copy chains a header mbuf and mbufs attached to registered memory: it needs
    // MULTI_SEGS, and excludes FAST_FREE (which assumes direct mbufs of one pool).
    caps.zero_copy_note = zero_copy_refusal(port_id, info, p);
    if (caps.zero_copy_note.empty()) {
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
        caps.multi_seg_tx = true;
    } else if ((tx_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) != 0) {
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
        caps.fast_free = true;
    }
    if ((rx_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0) {
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
        caps.rx_ip_csum = true;
    }
    if ((rx_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) != 0) {
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
        caps.rx_udp_csum = true;
    }
    check(rte_eth_dev_configure(port_id, caps.rx_queues, caps.tx_queues, &conf), port_id,
          "rte_eth_dev_configure");

    // Jumbo frames: raise the MTU when the PMD allows it. Software PMDs (memif,
    // ring) report 1500 yet carry whatever fits their buffers.
    if (p.max_frame > RTE_ETHER_MAX_LEN) {
        const uint32_t mtu = p.max_frame - RTE_ETHER_HDR_LEN;
        caps.mtu_raised = mtu <= info.max_mtu && rte_eth_dev_set_mtu(port_id, uint16_t(mtu)) == 0;
    }

    uint16_t rxd = p.rx_desc;
    uint16_t txd = p.tx_desc;
    check(rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rxd, &txd), port_id, "adjusting descriptors");
    rte_eth_rxconf rxq = info.default_rxconf;
    rxq.offloads = conf.rxmode.offloads;
    for (uint16_t q = 0; q < caps.rx_queues; ++q) {
        check(rte_eth_rx_queue_setup(port_id, q, rxd, uint32_t(caps.socket), &rxq, pool), port_id,
              "rte_eth_rx_queue_setup");
    }
    rte_eth_txconf txq = info.default_txconf;
    txq.offloads = conf.txmode.offloads;
    for (uint16_t q = 0; q < caps.tx_queues; ++q) {
        check(rte_eth_tx_queue_setup(port_id, q, txd, uint32_t(caps.socket), &txq), port_id,
              "rte_eth_tx_queue_setup");
    }
    // From here the peer can connect: memif's handling of it waits for our bursts.
    link_guard::port_opened(port_id, caps.driver == "net_memif");
    try {
        start_port(port_id, caps.name, p.peer_wait_ms);
    } catch (...) {
        link_guard::port_closed(port_id);
        throw;
    }
    rte_eth_promiscuous_enable(port_id); // peers may address us before learning our MAC

    rte_ether_addr mac{};
    check(rte_eth_macaddr_get(port_id, &mac), port_id, "rte_eth_macaddr_get");
    std::memcpy(caps.mac.bytes.data(), mac.addr_bytes, 6);
    return caps;
}

void stop_port(uint16_t port_id) noexcept
{
    {
        // Not while memif handles its peer's disconnect: both tear the rings down.
        const link_guard::section in(link_guard::section::wait);
        rte_eth_dev_stop(port_id);
        rte_eth_dev_close(port_id);
    }
    link_guard::port_closed(port_id);
}

bool port_link_up(uint16_t port_id) noexcept
{
    rte_eth_link link{};
    return rte_eth_link_get_nowait(port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

std::string format_mac(const mac_addr& m)
{
    char s[18];
    std::snprintf(s, sizeof s, "%02x:%02x:%02x:%02x:%02x:%02x", m.bytes[0], m.bytes[1],
                  m.bytes[2], m.bytes[3], m.bytes[4], m.bytes[5]);
    return s;
}

bool parse_mac(const std::string& s, mac_addr& out)
{
    unsigned b[6];
    char tail;
    if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
                    &b[5], &tail) != 6) {
        return false;
    }
    for (int i = 0; i < 6; ++i) {
        out.bytes[size_t(i)] = uint8_t(b[i]);
    }
    return true;
}

std::string format_ipv4(uint32_t host_order)
{
    char s[INET_ADDRSTRLEN];
    const in_addr a{htonl(host_order)};
    inet_ntop(AF_INET, &a, s, sizeof s);
    return s;
}

bool parse_ipv4(const std::string& s, uint32_t& out)
{
    in_addr a{};
    if (inet_pton(AF_INET, s.c_str(), &a) != 1) {
        return false;
    }
    out = ntohl(a.s_addr);
    return true;
}

} // namespace metaroce::dpdk
