// metaroce-perf --backend udp: the same session over the kernel-UDP backend
// (drivers/udp), one socket set per plane address, no DPDK port.
#pragma once

#include "options.hpp"
#include "report.hpp"

namespace metaroce::perf {

// Runs the whole test on a UDP node at o.local_addr (plane p at local + p x 256, as
// 10.0.0.1/10.0.1.1 on DPDK); returns the exit code. Throws std::invalid_argument
// for options that need DPDK ports.
int run_udp(const options& o, run_info info);

} // namespace metaroce::perf
