// --raw: the baseline without the transport. Bandwidth tests stream bare UDP
// frames of the transport's frame size from client to server (the server
// counts); latency tests ping-pong small frames (the server echoes).
#pragma once

#include "dpdk/node.hpp"
#include "options.hpp"
#include "report.hpp"

namespace metaroce::perf {

int run_raw(dpdk::node& n, const options& o, const run_info& info);

} // namespace metaroce::perf
