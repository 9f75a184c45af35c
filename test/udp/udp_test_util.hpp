// What the UDP backend's tests share: nodes on loopback addresses, a wall-clock
// driver for them, registered buffers with a verifiable pattern.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "udp/node.hpp"

namespace metaroce::udp::test {

inline constexpr uint32_t k_all_access =
    access::local_write | access::remote_write | access::remote_read;

// 127.a.b.c in host order.
constexpr uint32_t lo(uint8_t a, uint8_t b, uint8_t c)
{
    return (127u << 24) | (uint32_t(a) << 16) | (uint32_t(b) << 8) | c;
}

inline node_params params(std::vector<uint32_t> planes, uint16_t port = 4796)
{
    node_params p;
    p.plane_addrs = std::move(planes);
    p.port = port;
    p.seed = 0;
    return p;
}

// Polls every node until done() or the time runs out.
inline bool drive(std::initializer_list<node*> nodes, const std::function<bool()>& done,
                  std::chrono::milliseconds limit = std::chrono::milliseconds(20000))
{
    const uint64_t end = node::now_ns() + uint64_t(limit.count()) * 1'000'000;
    while (!done()) {
        const uint64_t now = node::now_ns();
        if (now > end) {
            return done();
        }
        for (node* n : nodes) {
            n->poll(now);
        }
    }
    return true;
}

inline uint8_t pattern_byte(uint64_t i, uint8_t seed)
{
    return uint8_t((i * 131 + seed) ^ (i >> 9) ^ (i >> 17));
}

struct region {
    std::vector<uint8_t> bytes;
    memory_region mr;
    region(endpoint& e, size_t n, uint8_t seed)
        : bytes(n)
    {
        for (size_t i = 0; seed != 0 && i < n; ++i) {
            bytes[i] = pattern_byte(i, seed);
        }
        mr = *e.memory().register_region(bytes.data(), n, k_all_access);
    }
    // Bytes [off, off+len) hold the pattern of `seed` shifted by src_off; returns the
    // count that differ.
    size_t differ(size_t off, size_t len, uint8_t seed, size_t src_off = 0) const
    {
        size_t bad = 0;
        for (size_t i = 0; i < len; ++i) {
            bad += bytes[off + i] != pattern_byte(src_off + i, seed);
        }
        return bad;
    }
};

// Collects completions and connection events of one node.
struct sink {
    std::vector<completion> cq;
    std::vector<conn_event> ev;
    void drain(endpoint& e)
    {
        completion wc[64];
        for (size_t n; (n = e.poll_cq(wc)) > 0;) {
            cq.insert(cq.end(), wc, wc + n);
        }
        conn_event x[16];
        for (size_t n; (n = e.poll_events(x)) > 0;) {
            ev.insert(ev.end(), x, x + n);
        }
    }
    conn_id incoming() const
    {
        for (const auto& e : ev) {
            if (e.what == conn_event::kind::established && e.incoming) {
                return e.conn;
            }
        }
        return k_no_conn;
    }
};

} // namespace metaroce::udp::test
