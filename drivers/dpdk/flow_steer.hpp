// Hardware steering for a node with several workers: one rte_flow rule per worker and
// plane sending frames for that worker's address (IPv4 destination) straight to its
// RX queue, so packets of a connection land on the owner's queue whatever UDP source
// port (path) they use. Ports without rte_flow (net_memif, net_ring, net_af_packet)
// refuse the rule at rte_flow_validate: the workers' software hand-off then moves
// frames that arrive on another worker's queue (worker.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace metaroce::dpdk {

struct flow_target {
    uint32_t dst_ip = 0; // host order
    uint16_t queue = 0;
};

// Validates and creates the rules on a started port. All or nothing: true when every
// rule is in place; false (and nothing left installed) when the port refuses one,
// with the PMD's reason in `why`.
bool install_flow_steering(uint16_t port_id, const std::vector<flow_target>& targets,
                           std::string& why);
// Removes what install_flow_steering put on the port (before it is stopped).
void remove_flow_steering(uint16_t port_id) noexcept;

} // namespace metaroce::dpdk
