// Two endpoints joined by an in-memory wire with a fixed one-way delay. Tests use
// it to drive the real core, capture what is sent and drop or alter chosen packets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "common/endpoint_loop.hpp"
#include "metaroce/endpoint.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::test {

struct captured {
    uint64_t deliver_at = 0;
    int to = 0;                 // 0 = a, 1 = b
    rx_meta meta;
    tx_frame frame;             // route fields as the sender set them
    std::vector<uint8_t> bytes;
    wire::packet_view view() const { return wire::parse(bytes).pkt; }
};

class pair_harness {
public:
    static constexpr uint32_t k_addr_a = 0x0a000001;
    static constexpr uint32_t k_addr_b = 0x0a000002;

    explicit pair_harness(transport_config t = {}, uint64_t delay_ns = 1000)
        : pair_harness(t, t, delay_ns)
    {
    }
    // Each side with its own transport config and seed (seeds pick ISNs and entropy).
    pair_harness(transport_config ta, transport_config tb, uint64_t delay_ns = 1000,
                 uint64_t seed_a = 11, uint64_t seed_b = 22)
        : pair_harness(config(k_addr_a, ta, seed_a), config(k_addr_b, tb, seed_b), delay_ns)
    {
    }
    // Full endpoint configs; local_addr must be k_addr_a and k_addr_b.
    pair_harness(const endpoint_config& ca, const endpoint_config& cb, uint64_t delay_ns)
        : delay_(delay_ns), cfg_{ca, cb}
    {
        ep_[0] = std::make_unique<endpoint>(ca);
        ep_[1] = std::make_unique<endpoint>(cb);
    }
    // The node of one side restarts: a fresh endpoint with the same config (so the
    // same seed). Packets already on the wire still arrive.
    void restart(int side)
    {
        ep_[side] = std::make_unique<endpoint>(cfg_[side]);
    }
    static endpoint_config config(uint32_t addr, const transport_config& t, uint64_t seed)
    {
        endpoint_config c;
        c.local_addr = addr;
        c.transport = t;
        c.seed = seed;
        return c;
    }

    endpoint& a() { return *ep_[0]; }
    endpoint& b() { return *ep_[1]; }
    uint64_t now() const { return now_; }

    // Returning true from the filter drops the packet; it may also edit it, including
    // deliver_at (a later time reorders it behind packets sent after it).
    std::function<bool(captured&)> filter;
    // Called right after each packet is handed to an endpoint (before timers run).
    std::function<void(const captured&)> on_delivered;
    std::vector<captured> sent;      // every packet put on the wire, in order
    // Ask the cores for data payloads by reference (tx_frame::payload); the wire joins
    // headers and pieces, so the bytes on it are the same as in copy mode.
    bool zero_copy = false;
    bool record = true;
    bool auto_drain[2] = {true, true}; // poll each side's CQ after every step
    uint32_t busy_planes[2] = {0, 0};  // what each side's driver says of its ports (tx_frame::busy_planes)
    uint64_t timer_tick_ns = 0; // when idle, wake only on multiples of this (a coarse poll loop)

    // Connects a to b and runs until both sides are established.
    conn_id connect()
    {
        const conn_id c = a().connect(k_addr_b, now_);
        run_until([&] { return established(a(), c) && peer_conn_b_ != k_no_conn; });
        return c;
    }
    conn_id peer_conn() const { return peer_conn_b_; }

    // Puts a packet on the wire to arrive at c.deliver_at (kept in arrival order,
    // FIFO among equal times). Tests use it to deliver copies again.
    void inject(captured c)
    {
        const auto at = std::upper_bound(wire_.begin(), wire_.end(), c.deliver_at,
                                         [](uint64_t t, const captured& x) { return t < x.deliver_at; });
        wire_.insert(at, std::move(c));
    }
    uint64_t delay() const { return delay_; }

    static bool established(endpoint& e, conn_id c)
    {
        auto info = e.inspect(c);
        return info && info->state == conn_state::established;
    }

    // One step: send what both sides have, deliver what is due, fire timers.
    bool step()
    {
        bool progressed = false;
        for (int side = 0; side < 2; ++side) {
            wire_io out{*this, side};
            progressed |= io::pull_tx(*ep_[side], out, now_).pulled != 0;
        }
        if (!wire_.empty() && wire_.front().deliver_at <= now_) {
            while (!wire_.empty() && wire_.front().deliver_at <= now_) {
                captured c = std::move(wire_.front());
                wire_.pop_front();
                ep_[c.to]->on_packet(c.meta, c.bytes, now_);
                if (on_delivered) {
                    on_delivered(c);
                }
                progressed = true;
            }
        } else {
            // Advance time to the next delivery or timer.
            uint64_t next = std::min(ep_[0]->next_timer(), ep_[1]->next_timer());
            if (!wire_.empty()) {
                next = std::min(next, wire_.front().deliver_at);
            }
            if (next == k_no_deadline) {
                return progressed;
            }
            if (timer_tick_ns != 0) {
                next = (next + timer_tick_ns - 1) / timer_tick_ns * timer_tick_ns;
            }
            now_ = std::max(now_, next);
        }
        io::run_due_timers(*ep_[0], now_);
        io::run_due_timers(*ep_[1], now_);
        drain_events();
        return true;
    }

    template <typename Pred>
    bool run_until(Pred done, uint64_t max_ns = 2'000'000'000ull)
    {
        const uint64_t limit = now_ + max_ns;
        while (!done()) {
            if (now_ > limit || !step()) {
                return done();
            }
        }
        return true;
    }

    // Completions collected per side, in the order polled.
    std::vector<completion> cq[2];
    std::vector<conn_event> events[2];

    void drain_cq()
    {
        for (int s = 0; s < 2; ++s) {
            if (!auto_drain[s]) {
                continue;
            }
            completion wc[64];
            size_t n;
            while ((n = ep_[s]->poll_cq(wc)) > 0) {
                cq[s].insert(cq[s].end(), wc, wc + n);
            }
        }
    }

private:
    struct wire_io {
        pair_harness& h;
        int side;
        std::span<uint8_t> tx_buffer(uint64_t) noexcept { return h.tx_buf_; }
        void tx_unused() noexcept {}
        bool tx_zero_copy() const noexcept { return h.zero_copy; }
        uint32_t tx_busy_planes(uint64_t) const noexcept { return h.busy_planes[side]; }
        io::tx_next tx_send(const tx_frame& f, uint64_t) { return h.put_on_wire(side, f); }
    };

    // Each packet the loop pulls is captured, offered to the filter and put on the wire.
    io::tx_next put_on_wire(int side, const tx_frame& f)
    {
        captured c;
        c.deliver_at = now_ + delay_;
        c.to = 1 - side;
        c.meta.src_addr = side == 0 ? k_addr_a : k_addr_b;
        c.meta.plane = f.plane;
        c.meta.udp_sport = f.udp_sport;
        c.frame = f;
        c.frame.buf = {};
        c.bytes.assign(f.buf.begin(), f.buf.begin() + ptrdiff_t(f.len));
        for (size_t i = 0; i < f.payload_refs; ++i) {
            c.bytes.insert(c.bytes.end(), f.payload[i].host, f.payload[i].host + f.payload[i].len);
        }
        if (record) {
            sent.push_back(c);
        }
        if (!(filter && filter(c))) {
            inject(std::move(c));
        }
        return io::tx_next::more;
    }

    void drain_events()
    {
        for (int s = 0; s < 2; ++s) {
            conn_event ev[16];
            size_t n;
            while ((n = ep_[s]->poll_events(ev)) > 0) {
                for (size_t i = 0; i < n; ++i) {
                    events[s].push_back(ev[i]);
                    if (s == 1 && ev[i].what == conn_event::kind::established) {
                        peer_conn_b_ = ev[i].conn;
                    }
                }
            }
        }
        drain_cq();
    }

    std::unique_ptr<endpoint> ep_[2];
    std::deque<captured> wire_;
    std::vector<uint8_t> tx_buf_ = std::vector<uint8_t>(wire::max_packet_len(9000));
    uint64_t now_ = 0;
    uint64_t delay_;
    endpoint_config cfg_[2];
    conn_id peer_conn_b_ = k_no_conn;
};

// A registered buffer filled with a pattern.
struct buffer {
    std::vector<uint8_t> bytes;
    memory_region mr;
    // va = 0: peers see the host address; else they see va (reproducible across runs).
    buffer(endpoint& e, size_t n, uint32_t acc, uint8_t seed = 0, uint64_t va = 0)
        : bytes(n, 0)
    {
        uint8_t* p = bytes.data();
        for (size_t i = 0; seed != 0 && i < n; ++i) {
            p[i] = uint8_t((i * 31 + seed) ^ (i >> 8));
        }
        mr = va == 0 ? *e.memory().register_region(bytes.data(), n, acc)
                     : *e.memory().register_region(bytes.data(), va, n, acc);
    }
    uint64_t va(size_t off = 0) const { return mr.va + off; }
};

inline constexpr uint32_t k_all_access = access::local_write | access::remote_write | access::remote_read;

} // namespace metaroce::test
