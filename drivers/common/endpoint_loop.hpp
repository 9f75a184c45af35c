// The loop every driver runs around a sans-I/O engine (metaroce::endpoint, or the
// fabric model's sim_transport): hand received packets to on_packet(), run on_timer()
// once next_timer() is due, pull packets with poll_tx() into the I/O's buffers and
// give them to the I/O to send. Written once here; the packet I/O is the parameter.
//
// An Io provides:
//   std::span<uint8_t> tx_buffer(uint64_t now)   room for the next packet's UDP payload;
//                                                empty: the I/O takes nothing more now
//   void tx_unused()                             the last buffer was not filled
//   tx_next tx_send(const tx_frame& f, uint64_t now)  f.buf is the buffer, f.len bytes in it
// and, for poll():
//   bool rx_burst(const deliver_to<Engine>& deliver, uint64_t now)   receive what is
//                                                waiting, call deliver(meta, bytes) per
//                                                packet; true if any
//   bool tx_backlog(uint64_t now)                send what the I/O still holds; true while
//                                                it is backed up (then nothing is pulled, the
//                                                packets wait in the core's queues)
//   void tx_flush(uint64_t now)                  send what was queued by tx_send()
// optionally:
//   void before_tx(uint64_t now)                 runs between timers and the pull
//   bool after_reply(uint64_t now)               send_held(): runs after the reply left,
//                                                before the timers; true if it did work
//   bool tx_zero_copy()                          true: the I/O takes data payloads by
//                                                reference (tx_frame::payload)
//   uint64_t time_begin(), time_built(f, t0), time_timers(t0)
//                                                per-stage timing (dpdk/stage_timing.hpp)
//
// Header-only and allocation-free: it is the per-packet path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <concepts>
#include <span>

#include "metaroce/io_types.hpp"

namespace metaroce::io {

enum class tx_next : uint8_t { more, stop };

// Hands one received packet to the engine at the time of the poll.
template <class Engine>
struct deliver_to {
    Engine& ep;
    uint64_t now_ns;
    void operator()(const rx_meta& m, std::span<const uint8_t> bytes) const
    {
        ep.on_packet(m, bytes, now_ns);
    }
};

// Why pull_tx() stopped.
enum class tx_stop : uint8_t {
    core_idle, // poll_tx() had nothing to send now
    io_full,   // the I/O had no buffer or asked to stop
    budget,    // the budget was used up
};

struct pull_result {
    size_t pulled = 0; // packets poll_tx() built (including ones the I/O then dropped)
    size_t data = 0;   // of which data packets (counted for a data_first pull)
    tx_stop why = tx_stop::core_idle;
};

// The simplest Io for a pull: one reusable buffer, and a callable that takes each
// built frame (f.buf holds its bytes) and says whether to go on. Test wires use it.
// An Io that times the core's stages (a timestamp, then what it was spent on).
template <class Io>
concept timed_io = requires(Io& io, const tx_frame& f, uint64_t t0) {
    { io.time_begin() } -> std::same_as<uint64_t>;
    io.time_built(f, t0);
    io.time_timers(t0);
};

template <class Send>
struct span_io {
    std::span<uint8_t> buf;
    Send send;
    std::span<uint8_t> tx_buffer(uint64_t) noexcept { return buf; }
    void tx_unused() noexcept {}
    tx_next tx_send(const tx_frame& f, uint64_t) { return send(f); }
};
template <class Send>
span_io(std::span<uint8_t>, Send) -> span_io<Send>;

// Runs on_timer() if a timer is due; true if it ran.
template <class Engine>
inline bool run_due_timers(Engine& ep, uint64_t now_ns)
{
    if (ep.next_timer() > now_ns) {
        return false;
    }
    ep.on_timer(now_ns);
    return true;
}

// Pulls up to `budget` packets from the engine into the I/O's buffers.
// data_first: data ahead of the ACKs waiting (the held pass's reply, spec 5.4).
template <class Engine, class Io>
inline pull_result pull_tx(Engine& ep, Io& io, uint64_t now_ns, size_t budget = SIZE_MAX, bool data_first = false)
{
    pull_result r;
    while (r.pulled < budget) {
        tx_frame f;
        f.data_first = data_first;
        f.buf = io.tx_buffer(now_ns);
        if constexpr (requires { io.tx_zero_copy(); }) {
            f.want_payload_ref = io.tx_zero_copy(); // payload by reference (io_types.hpp)
        }
        if constexpr (requires { io.tx_busy_planes(now_ns); }) {
            f.busy_planes = io.tx_busy_planes(now_ns); // spec 5.3: ports that are backed up
        }
        if (f.buf.empty()) {
            r.why = tx_stop::io_full;
            return r;
        }
        uint64_t t0 = 0;
        if constexpr (timed_io<Io>) {
            t0 = io.time_begin();
        }
        if (!ep.poll_tx(now_ns, f)) {
            io.tx_unused();
            r.why = tx_stop::core_idle;
            return r;
        }
        if constexpr (timed_io<Io>) {
            io.time_built(f, t0);
        }
        ++r.pulled;
        r.data += data_first && f.is_data(); // only the held pass's first pull asks
        if (io.tx_send(f, now_ns) == tx_next::stop) {
            r.why = tx_stop::io_full;
            return r;
        }
    }
    r.why = tx_stop::budget;
    return r;
}

// What one poll() did.
struct poll_result {
    bool rx = false;       // received at least one packet
    bool timers = false;   // on_timer() ran
    bool backlog = false;  // the I/O was backed up: nothing pulled
    size_t pulled = 0;
    bool busy() const noexcept { return rx || timers || backlog || pulled != 0; }
};

// Runs on_timer() if due, timed when the I/O times stages; true if it ran.
template <class Engine, class Io>
inline bool run_timers_timed(Engine& ep, Io& io, uint64_t now_ns)
{
    uint64_t t0 = 0;
    if constexpr (timed_io<Io>) {
        t0 = io.time_begin();
    }
    const bool ran = run_due_timers(ep, now_ns);
    if constexpr (timed_io<Io>) {
        if (ran) {
            io.time_timers(t0);
        }
    }
    return ran;
}

// One run-to-completion pass: receive, timers, transmit. flush = false holds the pass
// open: it only receives, and nothing is built until send_held(), so a program that
// answers in between has its reply built and sent before anything else the pass owes.
template <class Engine, class Io>
inline poll_result poll_once(Engine& ep, Io& io, uint64_t now_ns, size_t tx_budget, bool flush = true)
{
    poll_result r;
    r.rx = io.rx_burst(deliver_to<Engine>{ep, now_ns}, now_ns);
    if (!flush) {
        return r;
    }
    r.timers = run_timers_timed(ep, io, now_ns);
    if constexpr (requires { io.before_tx(now_ns); }) {
        io.before_tx(now_ns);
    }
    if (io.tx_backlog(now_ns)) {
        r.backlog = true;
        return r;
    }
    r.pulled = pull_tx(ep, io, now_ns, tx_budget).pulled;
    io.tx_flush(now_ns);
    return r;
}

// The end of a pass split around the program's step (poll_once(..., false)). When the
// pass owes ACKs for what it received, the first data packet (the reply the program just
// posted) is built ahead of them and leaves in a burst of its own. Then the I/O's
// after_reply() (the worker takes in the ACKs it set aside), the timers (after those
// ACKs, so none fires for what they settle) and the rest, ACKs first again.
template <class Engine, class Io>
inline poll_result send_held(Engine& ep, Io& io, uint64_t now_ns, size_t tx_budget)
{
    poll_result r;
    r.backlog = io.tx_backlog(now_ns); // backed up: nothing is pulled, the rest still runs
    if (!r.backlog) {
        const bool owed = ep.acks_owed();
        const pull_result first = pull_tx(ep, io, now_ns, std::min<size_t>(tx_budget, 1), owed);
        r.pulled = first.pulled;
        if (first.data != 0 && owed) {
            io.tx_flush(now_ns);
        }
    }
    if constexpr (requires { io.after_reply(now_ns); }) {
        r.rx = io.after_reply(now_ns);
    }
    r.timers = run_timers_timed(ep, io, now_ns);
    if constexpr (requires { io.before_tx(now_ns); }) {
        io.before_tx(now_ns);
    }
    if (!r.backlog) {
        r.pulled += pull_tx(ep, io, now_ns, tx_budget - r.pulled).pulled;
        io.tx_flush(now_ns);
    }
    return r;
}

} // namespace metaroce::io
