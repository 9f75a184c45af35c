// The prompt's testpmd port commands: "show port info|stats all|<port>" and
// "clear port stats all|<port>", with testpmd's labels so its users read them as usual.
#include <rte_ethdev.h>

#include <chrono>
#include <cstdio>

#include "app.hpp"
#include "commands.hpp"
#include "dpdk/port.hpp"

namespace metaroce::app {

namespace {

// "all" or one of our ports (a[3]); throws with the synopsis otherwise.
std::vector<uint16_t> pick_ports(const application::args& a, const std::vector<uint16_t>& ours,
                                 const char* synopsis)
{
    if (a.size() != 4) {
        usage_error(synopsis, "expected 'all' or a port");
    }
    if (a[3] == "all") {
        return ours;
    }
    const uint64_t p = parse_number(a[3], "port");
    for (uint16_t q : ours) {
        if (q == p) {
            return {q};
        }
    }
    throw std::invalid_argument("port " + a[3] + " is not one of ours (planes use " + std::to_string(ours.size()) +
                                " port(s))");
}

uint64_t now_ns()
{
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

// Per second over `ns`, 0 before the first show (as testpmd).
uint64_t rate(uint64_t now_v, uint64_t then_v, uint64_t ns)
{
    return ns == 0 || now_v < then_v ? 0 : uint64_t(double(now_v - then_v) * 1e9 / double(ns));
}

// The port commands read DPDK ethdev counters; --backend udp has no ports.
bool refuse_on_udp(const app_config& c, const char* what)
{
    if (c.udp) {
        std::printf("%s: not on the udp backend (no DPDK ports; see 'show planes' and 'show stats')\n", what);
    }
    return c.udp;
}

} // namespace

void application::show_port_info(const args& a)
{
    if (refuse_on_udp(cfg_, "show port info")) {
        return;
    }
    for (uint16_t p : pick_ports(a, cfg_.ports, "show port info all|<port>")) {
        rte_eth_dev_info di{};
        rte_eth_dev_info_get(p, &di);
        rte_ether_addr mac{};
        rte_eth_macaddr_get(p, &mac);
        char name[RTE_ETH_NAME_MAX_LEN] = "?";
        rte_eth_dev_get_name_by_port(p, name);
        rte_eth_link link{};
        rte_eth_link_get_nowait(p, &link);
        uint16_t mtu = 0;
        rte_eth_dev_get_mtu(p, &mtu);
        size_t plane = 0;
        while (plane < cfg_.ports.size() && cfg_.ports[plane] != p) {
            ++plane;
        }
        char macs[RTE_ETHER_ADDR_FMT_SIZE];
        rte_ether_format_addr(macs, sizeof(macs), &mac);
        std::printf("\n********************* Infos for port %-2u *********************\n", p);
        std::printf("MAC address: %s\n", macs);
        std::printf("Device name: %s\n", name);
        std::printf("Driver name: %s\n", di.driver_name != nullptr ? di.driver_name : "?");
        std::printf("metaroce plane: %zu\n", plane);
        std::printf("Link status: %s\n", link.link_status ? "up" : "down");
        std::printf("Link speed: %u Mbps\n", link.link_speed);
        std::printf("Link duplex: %s\n", link.link_duplex ? "full-duplex" : "half-duplex");
        std::printf("Autoneg status: %s\n", link.link_autoneg ? "On" : "Off");
        std::printf("MTU: %u\n", mtu);
        std::printf("Promiscuous mode: %s\n", rte_eth_promiscuous_get(p) == 1 ? "enabled" : "disabled");
        std::printf("Allmulticast mode: %s\n", rte_eth_allmulticast_get(p) == 1 ? "enabled" : "disabled");
        std::printf("Maximum number of MAC addresses: %u\n", di.max_mac_addrs);
        std::printf("Minimum size of RX buffer: %u\n", di.min_rx_bufsize);
        std::printf("Maximum configurable length of RX packet: %u\n", di.max_rx_pktlen);
        std::printf("Current number of RX queues: %u\n", di.nb_rx_queues);
        std::printf("Max possible RX queues: %u\n", di.max_rx_queues);
        std::printf("Current number of TX queues: %u\n", di.nb_tx_queues);
        std::printf("Max possible TX queues: %u\n", di.max_tx_queues);
    }
}

void application::show_port_stats(const args& a)
{
    if (refuse_on_udp(cfg_, "show port stats")) {
        return;
    }
    for (uint16_t p : pick_ports(a, cfg_.ports, "show port stats all|<port>")) {
        rte_eth_stats s{};
        rte_eth_stats_get(p, &s);
        const uint64_t t = now_ns();
        rate_mark& m = rate_marks_[p];
        const uint64_t ns = m.ns == 0 ? 0 : t - m.ns;
        const uint64_t rx_pps = rate(s.ipackets, m.ipackets, ns), tx_pps = rate(s.opackets, m.opackets, ns);
        const uint64_t rx_bps = rate(s.ibytes, m.ibytes, ns) * 8, tx_bps = rate(s.obytes, m.obytes, ns) * 8;
        m = {s.ipackets, s.opackets, s.ibytes, s.obytes, t};
        std::printf("\n  ######################## NIC statistics for port %-2u ########################\n", p);
        std::printf("  RX-packets: %-10llu RX-missed: %-10llu RX-bytes:  %llu\n", (unsigned long long)s.ipackets,
                    (unsigned long long)s.imissed, (unsigned long long)s.ibytes);
        std::printf("  RX-errors: %llu\n  RX-nombuf:  %-10llu\n", (unsigned long long)s.ierrors,
                    (unsigned long long)s.rx_nombuf);
        std::printf("  TX-packets: %-10llu TX-errors: %-10llu TX-bytes:  %llu\n", (unsigned long long)s.opackets,
                    (unsigned long long)s.oerrors, (unsigned long long)s.obytes);
        std::printf("\n  Throughput (since last show)\n");
        std::printf("  Rx-pps: %12llu          Rx-bps: %12llu\n", (unsigned long long)rx_pps,
                    (unsigned long long)rx_bps);
        std::printf("  Tx-pps: %12llu          Tx-bps: %12llu\n", (unsigned long long)tx_pps,
                    (unsigned long long)tx_bps);
        std::printf("  ############################################################################\n");
    }
}

void application::clear_port_stats(const args& a)
{
    if (refuse_on_udp(cfg_, "clear port stats")) {
        return;
    }
    for (uint16_t p : pick_ports(a, cfg_.ports, "clear port stats all|<port>")) {
        rte_eth_stats_reset(p);
        rate_marks_[p] = {};
        std::printf("\n  NIC statistics for port %u cleared\n", p);
    }
}

} // namespace metaroce::app
