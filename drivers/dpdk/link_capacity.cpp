#include "dpdk/link_capacity.hpp"

#include <rte_ethdev.h>

#include <array>
#include <string_view>

namespace metaroce::dpdk {

bool virtual_pmd(const std::string& driver) noexcept
{
    static constexpr std::array<std::string_view, 9> k_virtual{
        "net_memif", "net_ring", "net_af_packet", "net_tap", "net_null",
        "net_pcap", "net_vhost", "net_virtio_user", "net_kni"};
    for (std::string_view v : k_virtual) {
        if (driver == v) {
            return true;
        }
    }
    return false;
}

uint64_t port_speed_mbps(uint16_t port_id) noexcept
{
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port_id, &link) != 0 || link.link_status != RTE_ETH_LINK_UP ||
        link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN) {
        return 0;
    }
    return link.link_speed; // Mb/s; RTE_ETH_SPEED_NUM_NONE is 0
}

link_capacity resolve_capacity(const std::vector<port_caps>& ports, std::optional<uint64_t> configured)
{
    if (configured) {
        return {*configured, *configured == 0 ? "off (configured)" : "configured"};
    }
    uint64_t sum = 0;
    for (const port_caps& c : ports) {
        if (virtual_pmd(c.driver)) {
            return {0, "off (" + c.driver + " reports no real link speed; set it to enable hints)"};
        }
        const uint64_t s = port_speed_mbps(c.port_id);
        if (s == 0) {
            return {0, "off (port " + std::to_string(c.port_id) + " has no link speed yet; set it to enable hints)"};
        }
        sum += s;
    }
    return {sum, "link speed"};
}

} // namespace metaroce::dpdk
