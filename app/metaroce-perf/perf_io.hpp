// The packet I/O a session drives, so the same session runs over DPDK ports
// (dpdk_io, the default) or kernel UDP sockets (udp_io, --backend udp): poll it,
// reach its endpoint, count what arrives (--timeout measures silence with it).
#pragma once

#include <cstdint>

#include "dpdk/worker.hpp"
#include "metaroce/endpoint.hpp"

namespace metaroce::perf {

class perf_io {
public:
    virtual ~perf_io() = default;
    virtual endpoint& ep() noexcept = 0;
    // One pass: receive, timers, transmit. now_ns on the session's clock.
    virtual void poll(uint64_t now_ns) = 0;
    // Sends what is still queued (the last ACKs and CLOSEs) before the process exits.
    virtual void flush() noexcept = 0;
    virtual uint32_t node() const noexcept = 0; // the node address (plane 0)
    virtual uint64_t rx_frames() const noexcept = 0;
};

class dpdk_io final : public perf_io {
public:
    explicit dpdk_io(dpdk::worker& w) : w_(w) {}
    endpoint& ep() noexcept override { return w_.ep(); }
    void poll(uint64_t now_ns) override { w_.poll(now_ns); }
    void flush() noexcept override { w_.flush(); }
    uint32_t node() const noexcept override { return w_.node(); }
    uint64_t rx_frames() const noexcept override { return w_.counters().rx_frames; }

private:
    dpdk::worker& w_;
};

} // namespace metaroce::perf
