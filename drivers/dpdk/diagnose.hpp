// Why the EAL or a device did not come up, in words a user can act on. DPDK logs a
// reason but hands back -1 with rte_errno unset ("Success" for a second process on the
// same --file-prefix) or generic ("Permission denied" for no hugepages), and a vdev that
// failed to probe simply is not there. These look at the facts instead: who holds the
// runtime config lock, what hugetlbfs offers, which memif socket is taken.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace metaroce::dpdk {

// The EAL options the diagnosis needs, read from argv before rte_eal_init permutes it.
struct eal_args {
    std::string file_prefix = "rte";
    std::string huge_dir;
    bool no_huge = false;
    bool in_memory = false;
};
eal_args scan_eal_args(int argc, char** argv);

// The cause of a failed rte_eal_init and what to do: one line, no trailing period.
std::string explain_eal_failure(const eal_args& a, int rte_err);

// After EAL init: the --vdev/-a devices that did not probe, each with its cause (a
// memif socket another process listens on, ...); "" when every device probed.
std::string explain_missing_devices();

// The EAL's ports not in `used`, as "1 (net_memif1), 2 (net_null0)"; "" when none.
std::string unused_ports(const std::vector<uint16_t>& used);

// A memif client port's server: "the memif server at socket /tmp/m.sock" and whether
// something listens there now (as /proc/net/unix of this network namespace shows).
struct memif_peer {
    std::string what;
    bool listening = false;
};
// nullopt for other ports (not memif, or role=server).
std::optional<memif_peer> memif_client_peer(uint16_t port_id);

} // namespace metaroce::dpdk
