// The packet I/O the datapath lcore drives, so the same loop, engines and prompt run
// over DPDK ports (dpdk_dp_io, the default) or kernel UDP sockets (--backend udp,
// udp_dp_io.hpp). Only the datapath lcore calls these (or the prompt through call()).
#pragma once

#include <cstdint>
#include <vector>

#include "dpdk/node.hpp"
#include "dpdk/worker_counters.hpp"
#include "metaroce/endpoint.hpp"

namespace metaroce::app {

class dp_io {
public:
    virtual ~dp_io() = default;
    virtual endpoint& ep() noexcept = 0;
    // One pass: receive, timers, transmit. May sleep briefly when idle (udp).
    virtual void poll(uint64_t now_ns) = 0;
    // Sends what is still queued (the last ACKs and CLOSEs) before the loop ends.
    virtual void flush() noexcept = 0;
    // The datapath counters in the DPDK worker's shape ("show stats", "show planes").
    virtual dpdk::worker_counters counters() = 0;
    virtual void clear_counters() noexcept = 0;
    // One per plane: the DPDK port, or on udp a stand-in named after its address.
    virtual const std::vector<dpdk::port_caps>& ports() const noexcept = 0;
};

class dpdk_dp_io final : public dp_io {
public:
    explicit dpdk_dp_io(const dpdk::node_params& np) : node_(np) {}
    endpoint& ep() noexcept override { return node_.w().ep(); }
    void poll(uint64_t now_ns) override { node_.w().poll(now_ns); }
    void flush() noexcept override { node_.w().flush(); }
    dpdk::worker_counters counters() override { return node_.w().counters(); }
    void clear_counters() noexcept override { node_.w().clear_counters(); }
    const std::vector<dpdk::port_caps>& ports() const noexcept override { return node_.ports(); }

private:
    dpdk::node node_;
};

} // namespace metaroce::app
