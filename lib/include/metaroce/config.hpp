// Tunables of one endpoint and of the connections it makes. Defaults suit a
// 100 Gb/s fabric with microsecond RTTs; doc/design.md explains each choice.
#pragma once

#include <cstdint>
#include <string>

#include "metaroce/wire/headers.hpp"

namespace metaroce {

struct cc_config {
    double path_cwnd_init = 8;      // packets
    double path_cwnd_min = 1;
    double path_cwnd_max = wire::k_sack_bits; // never more than the SACK window
    double conn_cwnd_init = 16;     // packets, across all paths; doubles per RTT until a mark
    // Packets a connection sends before its first ACK (spec 6.1). That round trip is blind:
    // 1 lets 256 senders starting at once fit a last-hop buffer (the first ACK then admits
    // each at its hinted share, or at conn_cwnd_init in slow start without a hint), at the
    // cost of about one RTT for a lone flow, once per (long-lived) connection. Never
    // more than conn_cwnd_init.
    double conn_cwnd_first = 1;
    double conn_cwnd_min = 2;
    double conn_cwnd_max = 4096;
    double additive_increase = 1;   // packets per RTT, per path
    double conn_additive_increase = 16; // packets per RTT, connection window
    // Both steps are per this much base RTT, not per round: a path or connection with a
    // longer base RTT takes proportionally larger steps (RTT fairness). 0: per round.
    uint64_t ai_reference_rtt_ns = 20'000;
    double ecn_gain = 1.0 / 16;     // EWMA gain of the marked fraction (DCTCP's g)
    // RTT growth as a congestion mark, for links that do not mark ECN (software links,
    // NIC queues): a sample this far above the path's smallest counts as marked.
    uint64_t delay_mark_ns = 100'000;
    // Receiver rate hints below this are raised to it: a hint can slow a sender, never
    // starve it (1 Mb/s would space 4 KiB packets 34 ms apart). 100 Mb/s still leaves a
    // 100 Gb/s receiver room for a 1000-way fan-in.
    uint32_t min_rate_hint_mbps = 100;
};

struct transport_config {
    uint16_t mtu = 4096;            // payload bytes per packet
    uint16_t paths = 16;            // paths per connection, 1..256
    uint8_t planes = 1;             // NIC ports, one per plane
    uint16_t max_streams = 16;
    uint16_t max_msgs = 256;        // outstanding messages per direction
    uint16_t rq_depth = 256;        // posted receives per stream
    uint16_t max_reads = 64;        // outstanding READs a responder serves at once
    // An ACK per 32 KiB of in-order data on a path (8 packets of 4 KiB), unless something
    // asks for one sooner (spec 5.4): a packet that fills its path's window asks, so a
    // small window is not held to this. Half the ACKs of 16 KiB: -140 instructions per
    // data packet in the core budget, the fabric model's figures all but unchanged.
    uint32_t ack_every_bytes = 32768;
    uint64_t ack_delay_ns = 4'000;
    uint64_t initial_rtt_ns = 20'000;
    uint64_t min_rto_ns = 100'000;
    // The probe timeout is never shorter than this (0: none beyond spec 5.6's formula).
    // Kernel sockets set it: a peer behind one often answers a few RTTs late (scheduling),
    // and each such tail would be probed needlessly.
    uint64_t min_probe_ns = 0;
    uint64_t max_rto_ns = 20'000'000;
    // Loss detection across paths (spec 5.5, RACK): a packet sent before one that was
    // delivered, on any path of the connection, is lost once a round trip and a reorder
    // window have passed since it left. The window starts at a quarter of the smallest
    // RTT and grows by that much per resend that proves spurious, at most reorder_steps_max
    // steps and never beyond the smoothed RTT. With hundreds of paths each carries a packet
    // or none, so the per-path SACK rule rarely sees a gap: without this only the tail
    // probe and the RTO find losses.
    bool rack = true;
    uint32_t reorder_steps_max = 16;
    // A tail probe with new data waiting sends it on the quiet path, asking for an ACK,
    // instead of resending the tail: that ACK tells whether the tail or only its ACK was
    // lost, and a lost ACK then costs no resend of data that arrived (spec 5.6).
    bool tlp_new_data = true;
    uint32_t max_timeouts = 12;     // consecutive RTOs of one path before the connection fails...
    uint64_t fail_silence_ns = 100'000'000; // ...and only once the path has been silent this long
    uint32_t max_backoff_shift = 3; // RTO doubles per consecutive timeout, at most 8x
    uint32_t reroute_after = 1;     // RTOs before a path takes a new UDP source port
    uint32_t replane_after = 2;     // RTOs before a path moves to the next plane
    uint32_t fail_after = 2;        // RTOs before a path is failed and probed before data
    uint32_t plane_down_after = 3;  // path timeouts on a plane, with no progress on it, to call it dead
    uint64_t plane_probe_ns = 200'000; // how often a dead plane is probed for re-admission
    uint64_t connect_retry_ns = 200'000; // doubles per retry, up to 64x
    uint32_t connect_retries = 20;
    // Each CONNECT and ACCEPT goes this many times at once, the copies on the next planes
    // with other UDP source ports (spec 7.3): a set-up waits on every handshake packet,
    // and at 10 % loss one packet in three set-ups would otherwise cost a retry interval.
    uint32_t hello_copies = 2;
    uint64_t rnr_delay_ns = 50'000;
    uint32_t rnr_retries = 7;       // 7 means retry forever, as in verbs
    // Liveness of idle connections (spec 7.8): a connection that heard nothing from its
    // peer for keepalive_ns probes it; after idle_timeout_ns of silence it fails, and a
    // failed connection nobody closes is freed after error_linger_ns. Generous on
    // purpose: a process stopped in a debugger or descheduled on a busy host for a
    // second must not lose its connections.
    uint64_t keepalive_ns = 200'000'000;
    uint64_t idle_timeout_ns = 5'000'000'000;
    uint64_t error_linger_ns = 2'000'000'000;
    cc_config cc;
};

struct endpoint_config {
    uint32_t local_addr = 0;        // IPv4 of this node (plane 0), host order
    uint32_t max_connections = 1024;
    uint32_t cq_depth = 65536;
    uint32_t max_mrs = 4096;
    // Scatter/gather entries of outstanding work requests with more than one piece,
    // shared by all connections (single-piece requests use none).
    uint32_t sge_entries = 16384;
    // Records of packets in flight (sent, not yet acknowledged), shared by all connections
    // in chunks of 16 PSNs of one path: a busy path holds in-flight / 16 + 1 or 2 chunks,
    // an idle one none. 4096 chunks (1.5 MiB, touched only as used) are 1024 connections
    // with 64 packets each in flight, or 64 connections with 16 busy paths at 32 each.
    // A path finds no chunk only when all are taken: it then waits like a full window
    // (counter record_pool_waits). At most 65535.
    uint32_t record_chunks = 4096;
    // Message slots, shared by all connections in chunks of 16 (a chunk of a connection's
    // max_msgs window is held while one of its 16 messages is outstanding). A post_send
    // that finds none returns queue_full; an inbound message that finds none is refused
    // as receiver-not-ready and resent (counter slot_pool_waits). Defaults: 256
    // connections with a full 256-message window each (9 MiB and 4.5 MiB, touched only
    // as used). At most 65535 each.
    uint32_t send_slot_chunks = 4096;
    uint32_t recv_slot_chunks = 4096;
    // RACK's send log (spec 5.5) in chunks of 64 transmissions (512 B), held while packets
    // are in flight: 2048 chunks hold 131072 entries, twice the record pool's packets.
    // With none free a transmission is not logged and only its tail probe or RTO can
    // find its loss (counter send_log_misses). At most 65535.
    uint32_t send_log_chunks = 2048;
    // READs being answered (max_reads per connection), in chunks of 16 held while one of
    // their READs is: a READ that finds none waits, committed in order, until another
    // connection's READ finishes (counter slot_pool_waits). 1024 chunks: 640 KiB.
    uint32_t read_job_chunks = 1024;
    // SACK bitmaps (32 B) of receiving paths with a hole open (a PSN arrived above the
    // next in order), held until the hole closes. A packet that would open one with none
    // free is not taken (counter sack_pool_waits) and is resent like a lost one.
    // 16384: 512 KiB. At most 65535.
    uint32_t sack_blocks = 16384;
    // What the next ACK of a receiving path reports (12 B: bytes, packets and CE marks
    // since the last, its place in the ACK queue), held from the first packet it answers
    // until it is built. A packet that finds none free is not taken (counter
    // ack_pool_waits) and is resent like a lost one. 16384: 192 KiB. At most 65535.
    uint32_t ack_blocks = 16384;
    // Stream records (48 B), taken at a stream's first use (a post, or the first packet
    // of a message on it) and kept until the connection goes. With none free a post is
    // refused (queue_full) and a message is deferred like one finding no receive slot
    // (counter slot_pool_waits). 16384 (16 streams for each of 1024 connections):
    // 768 KiB. At most 65535.
    uint32_t stream_blocks = 16384;
    bool accept_incoming = true;
    // Receiver rate hints (spec 6.4): this node's inbound capacity, all planes together.
    // 0 disables hints; drivers set it from their link speeds.
    uint64_t inbound_capacity_mbps = 0;
    double hint_utilization = 0.95;
    uint64_t rate_epoch_ns = 20'000;
    // Wire bytes a packet costs besides its UDP payload, for pacing at a hint (spec 6.5):
    // the driver's framing. 66 = Ethernet 14 + IPv4 20 + UDP 8 + FCS 4 + preamble and
    // inter-frame gap 20.
    uint32_t frame_overhead_bytes = 66;
    // Distinct UDP source ports the driver can send data from: path entropy is drawn
    // from 49152 .. 49152 + entropy_ports - 1, so a reroute that must change the port
    // (spec 5.6) changes it on the wire too. The kernel-UDP driver has fewer sockets.
    uint16_t entropy_ports = wire::k_udp_sport_span;
    // Initial PSNs, connection ids, nonces, tokens, the cookie key and path entropy all
    // derive from it: drivers on a real network seed it from the OS (getrandom); the
    // model and tests use fixed seeds for reproducible runs.
    uint64_t seed = 1;
    transport_config transport;
};

// Largest message (spec 4.1): offsets and lengths stay clear of 32-bit overflow.
inline constexpr uint32_t k_max_msg_len = 1u << 31;

// Empty if the configuration is usable, else which field is wrong and why (for example
// a zero max_rto, which would re-arm a timer at `now` for ever). The endpoint refuses
// to start with an invalid configuration; drivers call this to report it first.
std::string validate(const endpoint_config& c);

} // namespace metaroce
