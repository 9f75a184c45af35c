// Two endpoints in one process joined without any I/O: the sender's packets go
// straight into the receiver's on_packet() from the shared pull loop, and so do
// the receiver's ACKs back. A fake clock advances by a fixed step per round, so
// a run is the same sequence of calls every time (what callgrind counts). Two
// workloads: a stream of WRITEs (transfer: the per-packet budget) and a ping-pong of
// small SENDs (ping_pong: what one round trip of a latency test costs the core).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "metaroce/endpoint.hpp"

namespace metaroce::bench {

struct core_bench_options {
    uint16_t paths = 16;
    uint64_t bytes = 64ull << 20;     // total payload, sent as WRITEs of msg_bytes
    uint32_t msg_bytes = 1u << 20;
    uint32_t max_outstanding = 16;    // WRITEs posted ahead
    uint32_t round_budget = 64;       // data packets pulled per round at most
    uint64_t round_ns = 2'000;        // fake time per round
    uint32_t pings = 0;               // ping_pong(): round trips (0: run transfer())
    uint32_t ping_bytes = 2;          // ping_pong(): SEND size, as send_lat -s
};

struct core_bench_result {
    bool ok = false;
    std::string error;
    uint64_t data_packets = 0;        // sender: data packets built (retransmissions included)
    uint64_t acks = 0;                // receiver: ACKs built
    uint64_t retransmits = 0;
    uint64_t completions = 0;
    uint64_t wall_ns = 0;             // transfer() only, informational
    uint64_t fake_ns = 0;             // fake time the transfer took
    uint64_t round_trips = 0;         // ping_pong(): echoes that came back, bytes checked
};

class core_bench {
public:
    explicit core_bench(const core_bench_options& o);
    ~core_bench();

    // Connects the two endpoints; false if the handshake does not finish.
    bool connect();
    // Moves opt.bytes from the sender's buffer to the receiver's. Callgrind counts
    // only inside this function (scripts/core-budget.sh: --toggle-collect).
    core_bench_result transfer();
    // True if every byte landed where it was written from.
    bool verify() const;
    // opt.pings round trips: the sender SENDs opt.ping_bytes, the receiver echoes them
    // back from where they landed as soon as their receive completes (send_lat). Each
    // echo is compared with its ping. Callgrind counts only inside it (--toggle-collect).
    core_bench_result ping_pong();

    // The per-round pieces, kept out of line so callgrind can attribute them.
    size_t pump_data();               // sender -> receiver: data packets
    size_t pump_acks();               // receiver -> sender: ACKs

private:
    void handshake_round();

    core_bench_options opt_;
    std::unique_ptr<endpoint> a_;     // sender (requester)
    std::unique_ptr<endpoint> b_;     // receiver (responder)
    conn_id conn_ = k_no_conn;
    uint64_t now_ = 1'000;
    std::vector<uint8_t> src_;        // min(bytes, 4 MiB), written cyclically
    std::vector<uint8_t> dst_;
    memory_region src_mr_{};
    memory_region dst_mr_{};
    std::vector<uint8_t> buf_a_;
    std::vector<uint8_t> buf_b_;
};

} // namespace metaroce::bench
