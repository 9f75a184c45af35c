// The one control message of both programs, sent as a SEND on stream 0: a node's
// region (the exchange every connection starts with) and the steps of a test run.
// Big-endian, packed, size-checked like every wire struct.
//
// A run, between the side that drives a test (active) and its peer (passive):
//   active  --start-->   passive   passive clears its area, posts receives
//   active  <--ready--   passive
//   ... the engines run; the active side stops posting and drains ...
//   active  --done--->   passive
//   active  <--more---   passive   (per connection, while receives are still posted:
//   active  --done--->   passive    the active side sends that many more requests)
//   active  <-verdict-   passive   the passive side's data check
#pragma once

#include <cstdint>

#include "metaroce/wire/be.hpp"

namespace metaroce::engines {

inline constexpr uint32_t k_ctrl_magic = 0x4d524354; // "MRCT"
inline constexpr uint16_t k_ctrl_stream = 0;
inline constexpr uint16_t k_request_stream = 1;      // active -> passive
inline constexpr uint16_t k_reply_stream = 2;        // passive -> active (echoes)

enum class ctrl_type : uint8_t {
    region = 1, // this node's region; perf's client also names its test and connections
    start,
    ready,
    done,
    more,
    verdict,
    bye,        // perf's client: no more tests
};

enum class verdict_state : uint32_t { ok = 0, mismatch = 1, not_checked = 2 };

struct ctrl_msg {
    wire::be32_t magic;
    ctrl_type type;
    uint8_t test;            // region (perf), start: the test_kind
    wire::be16_t qps;        // region (perf): connections; more: which one owes
    wire::be64_t size;       // start: message size
    wire::be64_t iters;      // start: per connection (all ones: until done); done: completed
                             // (all connections); more: how many more
    wire::be32_t slots;      // start: slots per area; verdict: verdict_state
    wire::be32_t rkey;       // region: the region; start: where echoes go
    wire::be64_t va;
    wire::be64_t len;        // region: its length; done: iterations of the busiest connection
    wire::be64_t a;          // done (perf): peak (double bits); verdict: bad bytes;
                             // region (perf): the sender's workers (0: one)
    wire::be64_t b;          // done (perf): elapsed ns
} __attribute__((packed));
static_assert(sizeof(ctrl_msg) == 64);

inline ctrl_msg make_ctrl(ctrl_type t) noexcept
{
    ctrl_msg m{};
    m.magic = wire::be32_t::from_host(k_ctrl_magic);
    m.type = t;
    return m;
}

} // namespace metaroce::engines
