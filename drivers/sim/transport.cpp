#include "sim/transport.hpp"

#include <algorithm>

#include "sim/metaroce_transport.hpp"
#include "sim/rng.hpp"
#include "sim/rocev2/rnic.hpp"
#include "sim/scenario.hpp"
#include "sim/topology.hpp"
#include "sim/wire_size.hpp"

namespace metaroce::sim {

std::unique_ptr<sim_transport> make_transport(uint32_t index, const scenario& s,
                                              const host_load& load)
{
    const uint64_t seed = derive_seed(s.seed, 0xE9000000ull + index);
    // Tables sized to what this host carries, never below the core's defaults.
    const auto max_conns = std::max<uint32_t>(1024, load.connections + 16);
    const auto max_mrs = std::max<uint32_t>(4096, load.regions + 64);
    if (s.protocol.kind == protocol_kind::rocev2_model) {
        rocev2::params p;
        p.local_addr = host_addr(index);
        p.planes = uint8_t(s.topology.planes);
        p.spread_planes = s.protocol.spread_planes;
        p.mtu = s.transport.mtu;
        p.max_qps = max_conns;
        p.max_mrs = max_mrs;
        p.max_wqes = s.transport.max_msgs;
        p.ack_every_bytes = s.protocol.rocev2_ack_every_bytes;
        p.rto_ns = s.protocol.rocev2_timeout_ns;
        p.cm_retry_ns = s.transport.connect_retry_ns;
        p.seed = seed;
        p.cc.line_gbps = s.topology.link_gbps;
        return std::make_unique<rocev2::rnic>(p);
    }
    endpoint_config c;
    c.local_addr = host_addr(index);
    c.accept_incoming = true;
    c.seed = seed;
    c.max_connections = max_conns;
    c.max_mrs = max_mrs;
    c.transport = s.transport;
    c.frame_overhead_bytes = k_frame_overhead_bytes;
    // The receiver hands out its NIC capacity (all planes) as rate hints (spec 6.4).
    c.inbound_capacity_mbps = uint64_t(s.topology.link_gbps * 1000.0) * s.topology.planes;
    return std::make_unique<metaroce_transport>(c);
}

} // namespace metaroce::sim
