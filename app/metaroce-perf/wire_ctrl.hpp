// The perf tool's own control messages, exchanged as SENDs on stream 0 of the
// first connection. Big-endian, packed, size-checked like every wire struct.
#pragma once

#include <cstdint>

#include "metaroce/wire/be.hpp"

namespace metaroce::perf {

inline constexpr uint32_t k_ctrl_magic = 0x4d525046; // "MRPF"
inline constexpr uint16_t k_ctrl_stream = 0;
inline constexpr uint16_t k_data_stream = 1;

enum class ctrl_type : uint8_t {
    hello = 1,   // client -> server: test, sizes, region length, its buffer
    hello_reply, // server -> client: its buffer
    start,       // client -> server: next message size and iterations
    ready,       // server -> client: buffers cleared, receives posted
    done,        // client -> server: the client's measurements
    verdict,     // server -> client: result of the server-side data check
    bye,
};

struct ctrl_msg {
    wire::be32_t magic;
    ctrl_type type;
    uint8_t test;
    wire::be16_t qps;
    wire::be64_t size;
    wire::be64_t iters;
    wire::be32_t slots;      // verdict: 0 ok, 1 mismatch, 2 not checked
    wire::be32_t rkey;
    wire::be64_t va;
    wire::be64_t region_len;
    wire::be64_t a;          // done: peak (double bits); verdict: bad bytes
    wire::be64_t b;          // done: elapsed ns
} __attribute__((packed));
static_assert(sizeof(ctrl_msg) == 64);

} // namespace metaroce::perf
