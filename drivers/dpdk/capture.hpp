// Packet capture of our ports by DPDK's own tools (dpdk-dumpcap, dpdk-pdump): they run
// as secondary processes and ask the primary to copy its RX/TX bursts to them.
#pragma once

#include <string>

namespace metaroce::dpdk {

// Serves capture requests from this (primary) process. Returns an empty string, or
// why capture cannot work here (e.g. --no-huge: a primary without shared memory has
// no secondary processes to hand packets to). Call once after eal_init.
std::string enable_capture();

} // namespace metaroce::dpdk
