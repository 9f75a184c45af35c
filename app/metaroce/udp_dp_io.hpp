// --backend udp: the datapath over the kernel-UDP backend (drivers/udp), one socket
// set per plane address, no DPDK port.
#pragma once

#include <memory>

#include "app_config.hpp"
#include "dp_io.hpp"

namespace metaroce::app {

// The configured transport with timers kernel sockets can keep (RTO, delay mark).
transport_config udp_transport(transport_config t);

// Binds plane_ip(cfg.address, p) for each plane; throws std::runtime_error with the
// reason (address not local, in use, ...).
std::unique_ptr<dp_io> make_udp_dp_io(const app_config& cfg);

} // namespace metaroce::app
