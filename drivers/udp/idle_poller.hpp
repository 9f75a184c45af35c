// Drives a node from a thread that has nothing else to do between packets (the apps'
// datapath loops): busy-polls while there is work, then, after k_idle_passes empty
// passes, sleeps on the sockets until a datagram arrives or the endpoint's next timer is
// due, at most max_nap_ns (so run deadlines stay on time). Spinning without end made the
// two processes of a pair compete for the cores with everything else on a shared host:
// ACKs came late and RTOs fired hundreds of times a second. now_ns is the caller's
// clock, the one the endpoint's timers run on (node::wait() assumes the node's own).
#pragma once

#include <cstdint>

#include "udp/node.hpp"

namespace metaroce::udp {

class idle_poller {
public:
    static constexpr int k_idle_passes = 200; // ~ the Verbs progress thread's spin

    explicit idle_poller(node& n, uint64_t max_nap_ns = 1'000'000) : n_(n), max_nap_ns_(max_nap_ns) {}

    void poll(uint64_t now_ns);

private:
    node& n_;
    uint64_t max_nap_ns_;
    int idle_ = 0;
    uint64_t would_block_ = 0;
};

} // namespace metaroce::udp
