// Small helpers shared by the unit tests.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pair_harness.hpp"

namespace metaroce::test {

// Empty when equal, else where and how the two ranges first differ; keeps a failed
// comparison of megabytes to one line.
inline std::string first_mismatch(std::span<const uint8_t> want, std::span<const uint8_t> got)
{
    if (want.size() != got.size()) {
        std::ostringstream o;
        o << "size " << got.size() << " != expected " << want.size();
        return o.str();
    }
    for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] != got[i]) {
            std::ostringstream o;
            o << "first mismatch at offset " << i << ": got " << int(got[i]) << " expected "
              << int(want[i]);
            return o.str();
        }
    }
    return {};
}

inline bool all_zero(std::span<const uint8_t> b)
{
    for (uint8_t v : b) {
        if (v != 0) {
            return false;
        }
    }
    return true;
}

inline send_wr make_wr(wr_opcode op, const buffer& src, const buffer& dst, uint64_t id,
                       uint16_t stream = 0)
{
    send_wr wr;
    wr.wr_id = id;
    wr.op = op;
    wr.stream = stream;
    wr.local = {src.va(), uint32_t(src.bytes.size()), src.mr.lkey};
    wr.remote_va = dst.va();
    wr.rkey = dst.mr.rkey;
    wr.imm = uint32_t(id * 3 + 1);
    return wr;
}

inline recv_wr make_recv(const buffer& dst, uint64_t id)
{
    recv_wr r;
    r.wr_id = id;
    r.local = {dst.va(), uint32_t(dst.bytes.size()), dst.mr.lkey};
    return r;
}

// 1 KiB packets over 4 paths: a message of a few KiB already spans paths and packets.
inline transport_config small_mtu()
{
    transport_config t;
    t.mtu = 1024;
    t.paths = 4;
    return t;
}

// 64 paths: a message of a few dozen packets puts one packet on each path, so the
// per-path gap rule sees nothing and loss is found across paths (RACK, copies).
inline transport_config wide_paths()
{
    transport_config t;
    t.paths = 64;
    return t;
}

inline bool is_data(const captured& c) { return wire::info(c.view().op).reliable; }
inline bool is_op(const captured& c, wire::opcode op) { return c.view().op == op; }

// Tells an ACK's copy under loss (spec 3.6) from an ACK: the copy follows its ACK and is
// byte for byte the same but for BTH.plane. Feed it every ACK in wire order.
struct ack_copy_spotter {
    std::vector<uint8_t> last; // the previous ACK, BTH.plane cleared

    bool is_copy(const captured& ack)
    {
        std::vector<uint8_t> b = ack.bytes;
        b[offsetof(wire::bth, plane)] = 0;
        const bool copy = b == last;
        last = std::move(b);
        return copy;
    }
};

struct xorshift {
    uint64_t x;
    uint64_t next()
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    }
};

// A lossy wire for pair_harness::filter: drops about one packet in `every`, the same
// ones for the same seed.
inline std::function<bool(captured&)> lossy(uint64_t every, uint64_t seed)
{
    return [rng = xorshift{seed}, every](captured&) mutable { return rng.next() % every == 0; };
}

// Ends the process with a message if the guarded scope does not finish in time: a
// test of "this call returns" must fail, not hang until the runner's timeout.
class watchdog {
public:
    watchdog(const char* what, std::chrono::seconds limit) : what_(what)
    {
        thread_ = std::thread([this, limit] {
            const auto end = std::chrono::steady_clock::now() + limit;
            while (!done_.load()) {
                if (std::chrono::steady_clock::now() > end) {
                    std::fprintf(stderr, "watchdog: %s did not return\n", what_);
                    std::_Exit(3);
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        });
    }
    ~watchdog()
    {
        done_ = true;
        thread_.join();
    }
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

private:
    const char* what_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Builds a packet from `to`'s peer and queues it for delivery now, as the fabric would.
inline void inject_bytes(pair_harness& h, int to, std::vector<uint8_t> bytes, uint8_t plane = 0,
                         uint32_t src_addr = 0)
{
    captured c;
    c.deliver_at = h.now();
    c.to = to;
    c.meta.src_addr = src_addr != 0 ? src_addr : (to == 1 ? pair_harness::k_addr_a : pair_harness::k_addr_b);
    c.meta.plane = plane;
    c.meta.udp_sport = 49152;
    c.bytes = std::move(bytes);
    h.inject(std::move(c));
}

} // namespace metaroce::test
