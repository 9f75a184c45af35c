// The packet I/O a session drives, so the same session runs over DPDK ports
// (dpdk_io, the default) or kernel UDP sockets (udp_io, --backend udp): poll it,
// reach its endpoint, count what arrives (--timeout measures silence with it).
#pragma once

#include <sched.h>

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
    // The same pass split around the session's step (completions taken, replies posted):
    // poll_held only receives (it builds nothing and holds the ACKs it received);
    // send_held builds and sends the reply ahead of the ACKs owed, then takes the ACKs
    // in and runs the timers (dpdk::worker::send_held), so a ping-pong's echo waits on
    // no ACK. I/Os without a burst of their own just poll.
    virtual void poll_held(uint64_t now_ns) { poll(now_ns); }
    virtual void send_held(uint64_t) {}
    // Sends what is still queued (the last ACKs and CLOSEs) before the process exits.
    virtual void flush() noexcept = 0;
    virtual uint32_t node() const noexcept = 0; // the node address (plane 0)
    virtual uint64_t rx_frames() const noexcept = 0;
    // Memory registered with the endpoint that the ports may send from in place, and its
    // removal, which waits until no frame in flight refers to it (DPDK zero copy).
    virtual void mem_added(const void*, size_t) {}
    virtual void mem_removed(const void*) {}
    // The worker's stage timing (dpdk/stage_timing.hpp), to add `completion`; or null.
    virtual dpdk::stage_times* stages() noexcept { return nullptr; }
};

class dpdk_io final : public perf_io {
public:
    explicit dpdk_io(dpdk::worker& w) : w_(w) {}
    endpoint& ep() noexcept override { return w_.ep(); }
    void poll(uint64_t now_ns) override
    {
        if (!w_.poll(now_ns) && yield_idle_) {
            sched_yield();
        }
    }
    void poll_held(uint64_t now_ns) override { w_.poll(now_ns, false); }
    void send_held(uint64_t now_ns) override
    {
        if (!w_.send_held(now_ns) && yield_idle_) {
            sched_yield();
        }
    }
    // Shared cores: an idle worker gives its CPU to the others (several workers per core).
    void yield_when_idle(bool on) noexcept { yield_idle_ = on; }
    void flush() noexcept override { w_.flush(); }
    uint32_t node() const noexcept override { return w_.node(); }
    // Polled here or handed on by a sibling (crossed queues): either shows the peer alive.
    uint64_t rx_frames() const noexcept override { return w_.counters().rx_frames + w_.counters().handoff_in; }
    void mem_added(const void* base, size_t len) override { w_.tx_register(base, len); }
    void mem_removed(const void* base) override { w_.tx_deregister(base); }
    dpdk::stage_times* stages() noexcept override { return &w_.stages(); }

private:
    dpdk::worker& w_;
    bool yield_idle_ = false;
};

} // namespace metaroce::perf
