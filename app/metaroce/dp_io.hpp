// The packet I/O the datapath lcore drives, so the same loop, engines and prompt run
// over DPDK ports (dpdk_dp_io, the default) or kernel UDP sockets (--backend udp,
// udp_dp_io.hpp). Only the datapath lcore calls these (or the prompt through call()).
#pragma once

#include <cstdint>
#include <memory>
#include <sched.h>
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
    // The same pass split around the lane's step (completions taken, engines pumped):
    // replies leave ahead of the pass's ACKs, and ACKs received are taken in after them
    // (dpdk::worker::send_held). I/Os without bursts of their own just poll.
    virtual void poll_held(uint64_t now_ns) { poll(now_ns); }
    virtual void send_held(uint64_t) {}
    // Sends what is still queued (the last ACKs and CLOSEs) before the loop ends.
    virtual void flush() noexcept = 0;
    // The datapath counters in the DPDK worker's shape ("show stats", "show planes").
    virtual dpdk::worker_counters counters() = 0;
    virtual void clear_counters() noexcept = 0;
    // One per plane: the DPDK port, or on udp a stand-in named after its address.
    virtual const std::vector<dpdk::port_caps>& ports() const noexcept = 0;
    // Registered memory the ports may send from in place (zero copy, dpdk/extbuf.hpp),
    // and its removal, which waits until no frame in flight refers to it (throws
    // dpdk::dpdk_error when that does not happen in time).
    virtual void mem_added(const void*, size_t) {}
    virtual void mem_removed(const void*) {}
};

// Worker k of a node: one datapath lane's I/O (the node is shared by every lane).
class dpdk_dp_io final : public dp_io {
public:
    dpdk_dp_io(std::shared_ptr<dpdk::node> n, size_t k) : node_(std::move(n)), k_(k) {}
    endpoint& ep() noexcept override { return w().ep(); }
    void poll(uint64_t now_ns) override
    {
        if (!w().poll(now_ns) && yield_idle_) {
            sched_yield(); // shared cores: an idle lane gives its CPU to the others
        }
    }
    void poll_held(uint64_t now_ns) override { w().poll(now_ns, false); }
    void send_held(uint64_t now_ns) override
    {
        if (!w().send_held(now_ns) && yield_idle_) {
            sched_yield();
        }
    }
    void yield_when_idle(bool on) noexcept { yield_idle_ = on; }
    void flush() noexcept override { w().flush(); }
    dpdk::worker_counters counters() override { return w().counters(); }
    void clear_counters() noexcept override { w().clear_counters(); }
    const std::vector<dpdk::port_caps>& ports() const noexcept override { return node_->ports(); }
    void mem_added(const void* base, size_t len) override { w().tx_register(base, len); }
    void mem_removed(const void* base) override { w().tx_deregister(base); }

private:
    dpdk::worker& w() noexcept { return node_->w(k_); }
    std::shared_ptr<dpdk::node> node_;
    size_t k_;
    bool yield_idle_ = false;
};

} // namespace metaroce::app
