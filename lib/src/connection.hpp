// Internal state of one connection: paths (send and receive halves), outbound
// message slots, inbound message slots, streams and READ responder jobs.
// Everything is sized at connection set-up; the datapath never allocates.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "chunk_pool.hpp"
#include "record_pool.hpp"
#include "metaroce/congestion.hpp"
#include "metaroce/endpoint.hpp"
#include "metaroce/sack_window.hpp"
#include "metaroce/seq.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::detail {

inline constexpr uint32_t k_path_window = wire::k_sack_bits;
// A marked path's queueing (RTT above the connection's smallest) must exceed the
// connection's mean queueing this many times for its route to count as its own (spec 5.3).
inline constexpr uint64_t k_route_queue = 3;
inline constexpr int32_t k_nil = -1;
// RACK losses a path may take without delivering anything before its RTO is left to run.
inline constexpr uint32_t k_rack_strikes = 3;
// Tail probes a quiet path may send before its RTO under random loss (spec 5.6): one for
// the tail, one for that probe.
inline constexpr uint32_t k_spell_probes = 2;
// Proactive copies (spec 5.10): the connection's smoothed loss, in 1/65536 of its packets
// acknowledged, moves by 1/128 per packet; copies go out while it is at least 1/64.
inline constexpr uint32_t k_loss_one = 65536;
inline constexpr uint32_t k_loss_gain_shift = 7;
inline constexpr uint32_t k_copy_loss = k_loss_one / 64;
// One such share (loss_q, rx_retx_q) moved by its gain: towards all for one lost (or
// resent) packet, towards none for `packets` that were not.
inline void loss_share_up(uint32_t& q) noexcept
{
    q = std::min(q + (k_loss_one >> k_loss_gain_shift), k_loss_one);
}
inline void loss_share_down(uint32_t& q, uint32_t packets) noexcept
{
    q -= uint32_t((uint64_t(q) * std::min<uint32_t>(packets, 1u << k_loss_gain_shift)) >> k_loss_gain_shift);
}
// ... and while the connection's ECN alpha is below this: none of its recent rounds saw
// marks (a marked round raises alpha by 1/16 of its marked share, and alpha takes about
// 64 unmarked rounds to decay from 1/16 to here). Loss with marking is the queues' (a
// full buffer), and copies would only add to them; so would copies into a fabric near
// its capacity, which marks first.
inline constexpr double k_copy_alpha = 1.0 / 1024;
// A packet's transmissions, copies included, after which it is no longer copied: the
// original and its copy, a resend (both lost) and its copy. At 10 % loss all four are
// lost 1 in 10,000 times; past that the loss is a route's, not chance.
inline constexpr uint32_t k_copy_max_sends = 4;

// A path's window of k_path_window PSNs spans at most 17 chunks of 16 when `una` is not
// on a chunk boundary: the directory has a slot for each, as a ring starting at una's.
inline constexpr uint32_t k_dir_slots = k_path_window / k_chunk_records + 1;
inline constexpr uint32_t k_chunk_no_mask = 0xffffffffu >> k_chunk_shift; // chunk numbers wrap with PSNs

// RACK (spec 5.5): one transmission, in the connection's send order. 8 bytes: the path
// index (< 256) and the low 24 bits of the transmit number, which tell a live entry from
// a stale one (a path cannot send 2^24 packets while one entry waits in the log).
struct sent_entry {
    uint32_t psn = 0;
    uint32_t tag = 0;                 // xmit_no << 8 | path

    static sent_entry make(uint32_t psn, uint32_t xmit_no, uint32_t path) noexcept
    {
        return {psn, (xmit_no << 8) | (path & 0xffu)};
    }
    uint32_t path() const noexcept { return tag & 0xffu; }
    bool names(uint32_t xmit_no) const noexcept { return (tag >> 8) == (xmit_no & 0xffffffu); }
};

// The connection's transmissions in send order (RACK), in chunks of k_log_chunk entries
// drawn from the endpoint's log pool while packets are in flight and chained through the
// pool's aux words: an idle connection holds none. Free-running indexes, so a walk pops
// many entries with one store. Past `cap` entries the oldest is dropped, and with the
// pool spent a transmission goes unlogged: either loses RACK for it, not the tail probe
// or the RTO.
inline constexpr uint32_t k_log_chunk = 64;
using log_pool = chunk_pool<sent_entry, k_log_chunk>;

struct send_log {
    uint32_t head = 0;
    uint32_t tail = 0;
    uint32_t cap = 1;
    uint16_t head_chunk = 0;          // holds entry head; meaningless while empty
    uint16_t tail_chunk = 0;          // holds entry tail - 1

    // An empty log holds no chunk.
    bool empty() const noexcept { return head == tail; }
    // How many chunks on from head's the one holding entry `i` is (head <= i).
    uint32_t chunks_before(uint32_t i) const noexcept
    {
        constexpr uint32_t k_mask = 0xffffffffu / k_log_chunk; // chunk numbers wrap with indexes
        return ((i / k_log_chunk) - (head / k_log_chunk)) & k_mask;
    }
    uint32_t chunks() const noexcept { return empty() ? 0 : chunks_before(tail - 1) + 1; }
    // The chunk holding entry `i` (head <= i < tail), by the chain from head's.
    uint16_t chunk_of(log_pool& pool, uint32_t i) const noexcept
    {
        uint16_t c = head_chunk;
        for (uint32_t n = chunks_before(i); n > 0; --n) {
            c = pool.aux(c);
        }
        return c;
    }
    // False when the pool had no chunk for it (counted by the caller).
    bool push(log_pool& pool, const sent_entry& e) noexcept
    {
        if (empty() || tail % k_log_chunk == 0) {
            const uint16_t c = pool.take();
            if (c == pool.sentinel()) {
                return false;
            }
            if (empty()) {
                head_chunk = c;
            } else {
                pool.aux(tail_chunk) = c;
            }
            tail_chunk = c;
        }
        pool.base()[size_t(tail_chunk) * k_log_chunk + tail % k_log_chunk] = e;
        ++tail;
        if (tail - head > cap) {
            pop_to(pool, head + 1);
        }
        return true;
    }
    // Drops the entries before `to` (head <= to <= tail); chunks left behind go back.
    void pop_to(log_pool& pool, uint32_t to) noexcept
    {
        if (empty()) {
            head = tail = to;
            return;
        }
        while (head / k_log_chunk != to / k_log_chunk) {
            const uint16_t next = pool.aux(head_chunk); // stale past the tail chunk: unused then
            pool.give(head_chunk);
            head_chunk = next;
            head = (head / k_log_chunk + 1) * k_log_chunk;
        }
        head = to;
        if (empty() && tail % k_log_chunk != 0) {
            pool.give(head_chunk); // the tail's chunk, partly filled
        }
    }
};

// A path in two parts (issue 12): `path_tx`, 32 bytes, always present, and this block,
// drawn from an endpoint pool while the path is busy and returned once it is settled
// (settled(): nothing outstanding, no timer armed, in good health, nothing queued for
// it). Busy, everything here is exact; settled, the path keeps a 16-bit summary of its
// RTT estimates and window in path_tx (pack16), from which its next block starts. A
// settled path points at the pool's sentinel block, whose defaults read as nothing in
// flight, no deadline armed, no timeouts: readers need no branch. Nothing may write to
// the sentinel; every write below happens with the block held.
struct path_flight {
    uint32_t inflight = 0;            // records in_flight, lost or rnr_hold
    uint32_t highest_sacked_xmit = 0; // set to the path's xmit_counter when taken
    // Pool chunks holding this path's records, from una's chunk on (record_pool::k_nil:
    // none). A chunk is taken when next_psn enters it, returned when una leaves it or
    // nothing is outstanding.
    uint16_t dir[k_dir_slots] = {
        record_pool::k_nil, record_pool::k_nil, record_pool::k_nil, record_pool::k_nil,
        record_pool::k_nil, record_pool::k_nil, record_pool::k_nil, record_pool::k_nil,
        record_pool::k_nil, record_pool::k_nil, record_pool::k_nil, record_pool::k_nil,
        record_pool::k_nil, record_pool::k_nil, record_pool::k_nil, record_pool::k_nil,
        record_pool::k_nil};
    uint16_t tail = record_pool::k_nil; // the chunk of next_psn, once taken (saves a look-up per packet)
    uint8_t dir_head = 0;             // directory slot of una's chunk
    uint8_t rack_strikes = 0;         // RACK losses since the path last delivered (spec 5.5)
    uint8_t retx_next = 0;            // retx_paths' link (in the list only while busy)
    uint8_t spell_probes = 0;         // tail probes since the path last delivered (spec 5.6)
    uint32_t retx_from = 0;           // in retx_paths: no lost record before this PSN
    uint32_t also_cum = 0;            // highest cum another path's ACK repeated (spec 3.6)
    // RTT estimates in ns: samples are below 2^31 (on_ack drops larger ones) and the
    // smoothed values lie between samples, so 32 bits hold them exactly.
    uint32_t srtt_ns = 0;
    uint32_t min_rtt_ns = 0;
    uint32_t rttvar_ns = 0;
    uint32_t timeouts = 0;            // consecutive, reset by progress or an answered probe
    uint32_t stalls = 0;              // timeouts since data last made progress (probes do not count)
    uint32_t win_room = 1;            // window_room(cc.cwnd), by refresh_windows (sentinel: 1)
    // Packets (in 1/256) this path may have out while its own route is full (spec 5.3,
    // route_limit); 0 = no such limit. Settling keeps it in path_tx::route_lim_q.
    uint32_t route_win = 0;
    uint64_t rto_ns = 0;
    uint64_t rto_deadline = k_no_deadline;  // set through set_rto() (clearing may be direct)
    uint64_t tlp_deadline = k_no_deadline;  // tail-loss probe, once per quiet spell; set_tlp()
    uint64_t silent_since = 0;        // time of the first stall of the current streak
    uint64_t congested_until = 0;
    path_cc_state cc;
    // Counts of this busy spell; folded into the connection's (settled_counts) on return.
    uint64_t tx_packets = 0;
    uint64_t retransmits = 0;
    uint64_t acked_ce = 0;
    uint64_t acked_rx = 0;
};
using flight_pool = chunk_pool<path_flight, 1>;

// 16-bit summary of a 32-bit quantity: 11 significant bits and a 5-bit shift, rounded
// (relative error below 1/4096). Values below 2048 are exact.
inline uint16_t pack16(uint32_t v) noexcept
{
    if (v < 2048) {
        return uint16_t(v);
    }
    uint32_t s = uint32_t(std::bit_width(v)) - 11;
    uint64_t m = (uint64_t(v) + (1ull << (s - 1))) >> s;
    if (m == 2048) {
        m = 1024;
        ++s;
    }
    return uint16_t((s << 11) | uint32_t(m));
}

inline uint32_t unpack16(uint16_t q) noexcept
{
    return uint32_t(q & 2047u) << (q >> 11);
}

// A settled path's window in 1/128 packet (up to the 256-packet SACK window) and its ECN
// alpha in 1/65535, rounded.
inline uint16_t pack_cwnd(double cwnd) noexcept
{
    return uint16_t(std::clamp(cwnd, 0.0, 256.0) * 128 + 0.5);
}
inline double unpack_cwnd(uint16_t q) noexcept { return double(q) / 128; }
inline uint16_t pack_alpha(double alpha) noexcept
{
    return uint16_t(std::clamp(alpha, 0.0, 1.0) * 65535 + 0.5);
}
inline double unpack_alpha(uint16_t q) noexcept { return double(q) / 65535; }

// Always present: 32 bytes (with the receive half's 24, 56 per path); the rest of a
// busy path is its block, c.fl(p).
struct path_tx {
    uint32_t next_psn = 0;
    uint32_t una = 0;
    uint32_t xmit_counter = 0;
    uint16_t blk = 0;                 // its block in the endpoint's flight pool, or the sentinel
    uint16_t udp_sport = 0;
    // Settled: what the next block starts from (pack16; a window in 1/128 packets,
    // alpha in 1/65535). Read only when the block is taken.
    uint16_t srtt_q = 0;
    uint16_t rttvar_q = 0;
    uint16_t min_rtt_q = 0;
    uint16_t cwnd_q = 0;
    uint16_t alpha_q = 0;
    uint8_t plane = 0;
    uint8_t home_plane = 0;           // where the path lives while that plane is usable
    path_state state = path_state::good;
    uint8_t epoch = 0;                // bumps on every reroute (route entropy; wraps)
    bool probe_pending : 1 = false;   // a PROBE for this path is waiting to go out
    bool in_retx_list : 1 = false;
    bool tlp_new : 1 = false;         // a tail probe asked for the next new packet here
    bool ack_req_next : 1 = false;    // that packet asks for an ACK at once
    // Settled: the route limit its next block starts from (whole packets, at most 15;
    // 0 = none; path_flight::route_win while the block is held).
    uint8_t route_lim_q : 4 = 0;
    uint8_t tlp_next = 0;             // tlp_paths' link
};
static_assert(sizeof(path_tx) == 32);
static_assert(k_dir_slots == 17, "one slot per chunk a 256-PSN window can touch");

// The directory slot of psn on path p, which must lie in [una, una + k_path_window].
inline uint32_t dir_slot(const path_flight& f, const path_tx& p, uint32_t psn) noexcept
{
    const uint32_t s = f.dir_head + (((psn >> k_chunk_shift) - (p.una >> k_chunk_shift)) & k_chunk_no_mask);
    return s >= k_dir_slots ? s - k_dir_slots : s;
}

// RTT of a plane, smoothed (RFC 6298) over the samples of every path on it (spec 5.5):
// with many paths each has few samples, too few to measure its own spread.
struct plane_rtt {
    uint32_t srtt_ns = 0;
    uint32_t rttvar_ns = 0;
};

// One RTT sample into a smoothed RTT and its variation (RFC 6298; 64-bit sums).
inline void smooth_rtt(uint32_t& srtt, uint32_t& rttvar, uint32_t sample) noexcept
{
    if (srtt == 0) {
        srtt = sample;
        rttvar = sample / 2;
        return;
    }
    const uint64_t err = srtt > sample ? srtt - sample : sample - srtt;
    rttvar = uint32_t((3 * uint64_t(rttvar) + err) / 4);
    srtt = uint32_t((7 * uint64_t(srtt) + sample) / 8);
}

// When RACK may call a packet on path p late (spec 5.5): its path's RTT and four
// deviations, or, if sooner, the longer of its path's and its plane's RTT plus four of
// the plane's deviations. A path's first samples overstate its spread (the first sets it
// to half the sample) and a path of a wide connection has few; a plane's overstate it
// when its paths' routes differ (one through a queue): each bound alone is safe.
// `first` before the plane has a sample.
inline uint64_t late_after(const path_flight& p, const plane_rtt& l, uint64_t first) noexcept
{
    if (l.srtt_ns == 0) {
        return first;
    }
    const uint64_t plane = uint64_t(std::max(p.srtt_ns, l.srtt_ns)) + 4 * uint64_t(l.rttvar_ns);
    if (p.srtt_ns == 0) {
        return plane;
    }
    return std::min(plane, uint64_t(p.srtt_ns) + 4 * uint64_t(p.rttvar_ns));
}

// Tail-loss probe timeout: two smoothed RTTs plus the receiver's delayed-ACK allowance
// plus `queue_ns`, the queueing the receiver's hint allows (hint_queue_ns), never later
// than the RTO itself (which allows that queueing too).
// `min_probe_ns` floors it (transport_config::min_probe_ns), still within the RTO.
inline uint64_t probe_timeout(const path_flight& p, uint64_t initial_rtt_ns, uint64_t ack_delay_ns,
                              uint64_t queue_ns = 0, uint64_t min_probe_ns = 0) noexcept
{
    const uint64_t rtt = p.srtt_ns != 0 ? p.srtt_ns : initial_rtt_ns;
    const uint64_t formula = 2 * rtt + ack_delay_ns + queue_ns;
    const uint64_t pto = formula > min_probe_ns ? formula : min_probe_ns;
    return pto < p.rto_ns + queue_ns ? pto : p.rto_ns + queue_ns;
}

// Which packets of one message have arrived, without a per-packet bitmap (spec 8.4):
// a count and a keyed sum over packet indexes. Every index must arrive exactly once, so a
// peer that repeats one offset under a fresh PSN instead of sending another leaves the
// count right but the sum wrong (with probability 2^-64 of a miss, the key is secret).
struct coverage {
    uint32_t seen = 0;
    uint64_t sum = 0;
};

inline uint64_t index_hash(uint64_t key, uint64_t index) noexcept
{
    uint64_t z = index * 0x9e3779b97f4a7c15ull + key;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Packets of a message of msg_len bytes (spec 4.3); an empty message is one packet.
inline uint32_t packets_in(uint32_t msg_len, uint32_t mtu) noexcept
{
    return msg_len == 0 ? 1 : uint32_t((uint64_t(msg_len) + mtu - 1) / mtu);
}

// spec 4.3: packet k of a message starts at k * mtu and all but the last are full.
inline bool packet_shape_ok(uint32_t msg_len, uint32_t mtu, uint32_t offset, size_t len) noexcept
{
    if (msg_len == 0) {
        return offset == 0 && len == 0;
    }
    return offset % mtu == 0 && offset < msg_len && len == std::min<uint32_t>(mtu, msg_len - offset);
}

// The endpoint's secret key of those sums, and the sum a complete message of n packets
// must reach, kept for the last n (messages of one size need it computed once, not
// once each: it is a loop over every packet index).
struct coverage_key {
    uint64_t key = 0;
    uint32_t want_n = 0;              // 0: none kept yet (n is at least 1)
    uint64_t want = 0;

    uint64_t complete_sum(uint32_t n) noexcept
    {
        if (n != want_n) {
            uint64_t sum = 0;
            for (uint32_t i = 0; i < n; ++i) {
                sum += index_hash(key, i);
            }
            want_n = n;
            want = sum;
        }
        return want;
    }
};

// Counts one packet; true once every packet of the message is in, each exactly once.
// Returns false while incomplete; `corrupt` says a full count had the wrong indexes.
// `n` is packets_in(msg_len, mtu), for a caller that has it already.
inline bool cover_n(coverage& cv, coverage_key& key, uint32_t offset, uint32_t n, uint32_t mtu,
                    bool& corrupt) noexcept
{
    cv.sum += index_hash(key.key, offset / mtu);
    if (++cv.seen < n) {
        return false;
    }
    corrupt = cv.seen != n || key.complete_sum(n) != cv.sum;
    return !corrupt;
}

inline bool cover(coverage& cv, coverage_key& key, uint32_t offset, uint32_t msg_len, uint32_t mtu,
                  bool& corrupt) noexcept
{
    return cover_n(cv, key, offset, packets_in(msg_len, mtu), mtu, corrupt);
}

// A path's SACK bitmap (spec 5.2) is held only while a hole is open: from the first PSN
// that arrives above `expected` until the run is complete again (every bit clear).
using sack_pool = chunk_pool<sack_window::bitmap, 1>;

// What a path's next ACK reports, held from the first packet it answers (or the first
// reason to send one) until it is built: an idle path owes none and holds none. The
// sentinel reads as nothing owed.
struct ack_block {
    uint32_t bytes_since_ack = 0;
    uint16_t rx_pkts = 0;
    uint16_t ce_pkts = 0;
    bool queued = false;              // in the connection's ack_queue
    bool delayed = false;             // waits for ack_deadline
    uint8_t next = 0;                 // ack_queue's link
};
using ack_pool = chunk_pool<ack_block, 1>;

// 16 bytes; the bitmap of an open hole and the ACK owed are in endpoint pools.
struct path_rx {
    uint32_t expected = 0;            // the cumulative point: next PSN in order
    uint32_t last_ts = 0;             // echoed by every ACK, owed or not (a pushed share)
    uint16_t sack = 0;                // its bitmap while a hole is open, else the pool's sentinel (all clear)
    uint16_t ack = 0;                 // its ack_block while an ACK is owed, else the pool's sentinel
    uint16_t reply_sport = 0;         // ACKs go back the way data came
    uint8_t reply_plane = 0;
};
static_assert(sizeof(path_rx) == 16);

// A FIFO of path indexes threaded through a byte of each path's state (`link`), so
// nothing in it is sized by the path count. A path is in a list at most once (a flag
// says so): a push never fails. Paths are at most 256, so a byte names any of them and
// the count, not a nil link, marks the end.
struct path_list {
    uint16_t count = 0;
    uint8_t head = 0;
    uint8_t tail = 0;

    bool empty() const noexcept { return count == 0; }
    uint32_t size() const noexcept { return count; }
    uint32_t front() const noexcept { return head; }
    template <typename Link>
    void push(uint32_t path, Link&& link) noexcept
    {
        if (count == 0) {
            head = uint8_t(path);
        } else {
            link(tail) = uint8_t(path);
        }
        tail = uint8_t(path);
        ++count;
    }
    template <typename Link>
    void pop(Link&& link) noexcept
    {
        if (--count != 0) {
            head = link(head);
        }
    }
    void clear() noexcept { count = 0; }
};

// Requester: one posted send work request, keyed by msn % max_msgs.
struct send_slot {
    bool in_use = false;
    bool done = false;
    bool resp_complete = false;       // READ: every response byte has landed
    bool orphaned = false;            // its bytes are an orphan_copy: never sent by reference
    wc_status status = wc_status::success;
    wire::opcode op{};
    uint32_t msn = 0;
    uint32_t ssn = 0;
    uint32_t recv_seq = 0;
    send_wr wr;                       // local memory: checked whole once per region epoch (mr_tag)
    int32_t sgl = -1;                 // its gather/scatter list in the endpoint's sge_pool
    uint32_t next_offset = 0;
    bool fully_sent = false;
    uint16_t mr_tag = 0;              // mrs.epoch() when wr.local was found valid whole (0: not)
    uint32_t pkts_total = 0;
    uint32_t pkts_acked = 0;
    coverage resp;                    // READ: response packets placed
    uint32_t rnr_count = 0;
    int32_t next_in_stream = k_nil;
};

// A request whose Verbs QP went away: its bytes, copied where the engine owns them, so
// it can still be resent (or its READ response land) after the application's regions go.
struct orphan_copy {
    std::unique_ptr<uint8_t[]> bytes;
    uint32_t len = 0;                 // of bytes (state_bytes counts them)
    uint32_t lkey = 0;
    uint32_t slot = 0;                // send slot and msn it serves; pruned once they differ
    uint32_t msn = 0;
};

// Responder: one inbound message, keyed by the peer's msn % max_msgs.
struct recv_slot {
    bool in_use = false;
    wire::opcode op{};
    uint16_t stream = 0;
    uint8_t tail_len = 0;
    bool solicited = false;
    uint16_t mr_tag = 0;              // WRITE: mrs.epoch() when [va, va+msg_len) was found valid
    uint32_t msn = 0;
    uint32_t ssn = 0;
    uint32_t recv_seq = 0;
    uint32_t msg_len = 0;
    coverage got;
    uint32_t imm = 0;
    uint32_t pkts = 1;                // packets_in(msg_len, mtu), set when opened
    uint64_t va = 0;                  // WRITE/READ: checked under rkey (a WRITE once per region epoch)
    uint32_t rkey = 0;
    uint8_t tail[8] = {};             // last bytes of a WRITE, placed at commit
    int32_t next_pending = k_nil;
};

// Kept by key, not by pointer: deregistering the region fails every later packet.
struct posted_recv {
    uint64_t wr_id = 0;
    uint64_t addr = 0;
    uint32_t lkey = 0;
    uint32_t length = 0;
    int32_t sgl = -1;                 // a scatter list in the endpoint's sge_pool
};

// A stream's state, drawn from an endpoint pool when the stream is first used (a post
// on it, or the first packet of a message on it) and kept until teardown: its sequence
// numbers must survive idle spells. Unused streams read the pool's sentinel, whose
// defaults say nothing posted, pending or received.
struct stream_state {
    // requester side
    uint32_t next_ssn = 0;
    uint32_t next_recv_seq = 0;
    int32_t head = k_nil;             // oldest uncompleted send slot
    int32_t tail = k_nil;
    // responder side
    uint32_t commit_ssn = 0;
    int32_t pending = k_nil;          // complete, not yet committed inbound slots
    uint32_t rq_posted = 0;
    uint32_t rq_consumed = 0;
    posted_recv* rq = nullptr;        // its receive ring, once posted to (owned by connection::rqs)
    uint32_t rq_size = 0;
};
using stream_pool = chunk_pool<stream_state, 1>;

// Responder: a READ being answered from local memory.
struct read_job {
    bool in_use = false;
    bool done = false;
    uint16_t stream = 0;
    uint32_t msn = 0;                 // requester's msn
    uint64_t va = 0;                  // source, checked under rkey for every packet
    uint32_t rkey = 0;
    uint32_t len = 0;
    uint32_t next_offset = 0;
    bool fully_sent = false;
    bool failed = false;              // its source failed a check; a NAK says so
    uint32_t pkts_total = 0;
    uint32_t pkts_acked = 0;
};

// NAKs wait here for the next poll, which sends them ahead of data: a ring of a few
// covers a burst of refused packets; past it a NAK is dropped (nak_drops) and the
// packet's resend brings another, as when a NAK is lost on the wire.
inline constexpr uint32_t k_nak_ring = 16;

struct nak_entry {
    uint8_t path = 0;
    uint32_t psn = 0;
    wire::nak_header hdr{};
};
// The ring is a chunk of the endpoint's pool, held only while a NAK waits. The pool has
// a chunk for every connection slot, so a push finds one (else it counts as a drop).
using nak_pool = chunk_pool<nak_entry, k_nak_ring>;

struct nak_queue {
    uint16_t chunk = 0;               // meaningless while empty
    uint8_t head = 0;
    uint8_t count = 0;

    bool empty() const noexcept { return count == 0; }
    // False (the NAK is dropped) when the ring is full or no chunk is free.
    bool push(nak_pool& pool, const nak_entry& e) noexcept
    {
        if (count == k_nak_ring) {
            return false;
        }
        if (count == 0) {
            chunk = pool.take();
            if (chunk == pool.sentinel()) {
                return false;
            }
            head = 0;
        }
        pool.base()[size_t(chunk) * k_nak_ring + (head + count) % k_nak_ring] = e;
        ++count;
        return true;
    }
    const nak_entry& front(const nak_pool& pool) const noexcept
    {
        return pool.base()[size_t(chunk) * k_nak_ring + head];
    }
    void pop(nak_pool& pool) noexcept
    {
        head = uint8_t((head + 1) % k_nak_ring);
        if (--count == 0) {
            pool.give(chunk);
        }
    }
    // Teardown: the chunk goes back with whatever waits in it.
    void release(nak_pool& pool) noexcept
    {
        if (count != 0) {
            pool.give(chunk);
            count = 0;
        }
    }
};

// Connection ids carry their table slot + 1 in the low 16 bits (a generation above).
inline uint32_t slot_of(conn_id id) noexcept { return (id & 0xffffu) - 1; }

// What a failed local memory check means to post_send/post_recv.
inline post_result to_post_result(mr_check c) noexcept
{
    switch (c) {
    case mr_check::ok: return post_result::ok;
    case mr_check::bad_key: return post_result::bad_lkey;
    case mr_check::access_denied: return post_result::bad_access;
    case mr_check::out_of_bounds: return post_result::out_of_bounds;
    }
    return post_result::bad_lkey;
}

struct connection;
void mark_fatal(connection& c, wire::nak_reason reason, uint32_t msn) noexcept;
void queue_retx(connection& c, uint32_t path, uint32_t psn) noexcept;
// Marks every packet of a path that is on the wire as lost and queues it for resending.
void requeue_in_flight(connection& c, uint32_t path) noexcept;

struct connection {
    conn_id id = k_no_conn;
    conn_id peer_conn = k_no_conn;
    uint32_t peer_addr = 0;
    conn_state state = conn_state::connecting;
    bool incoming = false;
    uint64_t nonce = 0;               // the handshake's; its low half is the CLOSE token
    uint64_t cookie = 0;              // initiator: the acceptor's cookie to echo (spec 7.7)
    uint32_t probe_token = 0;         // echoed by PROBE_ACKs; never leaves the two peers
    uint32_t isn = 0;

    // Negotiated (own config until ACCEPT for an initiator).
    uint16_t paths = 0;
    uint16_t mtu = 0;
    uint16_t streams_n = 0;
    uint16_t max_msgs = 0;            // peer-agreed window of outstanding messages
    uint8_t planes = 1;
    uint16_t blk_held = 0;            // paths holding a flight block (park_all stops at 0)
    uint32_t win_room = 1;            // window_room(effective_cwnd(cc)), by refresh_windows

    std::vector<path_tx> ptx;
    pkt_record* recs = nullptr;       // the endpoint's record pool (chunk i at i * 16)
    path_flight* fls = nullptr;       // the endpoint's flight pool (block i at fls[i])
    // Counts of the paths' busy spells past (path_flight's, added when a block goes back).
    uint64_t settled_tx = 0;
    uint64_t settled_retx = 0;
    std::vector<path_rx> prx;
    conn_cc_state cc;
    uint64_t min_rtt_ns = 0;          // smallest RTT sample of any path
    uint64_t srtt_ns = 0;             // smoothed over every path's samples
    std::vector<plane_rtt> plane_rtts; // one per plane, by the plane a path is on now
    uint32_t inflight = 0;
    uint32_t rr_path = 0;
    // RACK (spec 5.5): losses judged by time across all paths of the connection.
    send_log sent_order;              // transmissions, oldest first
    path_list tlp_paths;              // paths whose tail probe waits for a new packet (tlp_link)
    uint32_t rack_sent = 0;           // send time (low 32 bits) of the newest-sent delivered packet
    uint32_t rack_rtt = 0;            // its round trip
    bool rack_valid = false;
    uint32_t reo_steps = 1;           // reorder window in min_rtt/4 steps; spurious resends grow it
    uint32_t reo_clean = 0;           // RACK losses since the window last changed
    uint64_t rack_deadline = k_no_deadline; // when the oldest packet on the wire may be judged
    // Proactive copies (spec 5.10): the smoothed share of acknowledged packets whose
    // (re)transmission before the one that arrived was lost (k_loss_one = all), the copies
    // of records still outstanding (each holds one more packet of the window) and the
    // sent_order index up to which transmissions were considered for a copy, and the
    // copies that delivered their packet (loss_slack counts them as resends).
    uint32_t loss_q = 0;
    uint32_t copies = 0;
    uint32_t copy_at = 0;
    uint64_t copy_resends = 0;

    slot_table<send_slot> sq;         // size = own max_msgs; chunks while in use
    std::vector<orphan_copy> orphans; // control path only (endpoint::orphan_sends)
    uint32_t next_msn = 0;            // next msn to assign
    uint32_t tx_msn = 0;              // next msn to packetize
    // produce_new's view of message tx_msn, kept across its packets: its slot
    // (tx_msn % sq.size()), and whether the peer's window of max_msgs messages admits it
    // (once it does it stays so: msns only grow). advance_tx() moves all three.
    uint32_t tx_slot = 0;
    bool tx_admitted = false;
    uint32_t outstanding = 0;
    uint32_t reads_outstanding = 0;

    slot_table<recv_slot> rslots;     // size = negotiated max_msgs; chunks while in use
    // Each stream's record in the endpoint's stream pool, or its sentinel while unused;
    // sized by the local stream count (requests posted while connecting may name streams
    // the peer turns out not to have).
    std::vector<uint16_t> sdir;
    stream_state* strs = nullptr;     // the pool's storage
    std::vector<std::unique_ptr<posted_recv[]>> rqs; // the receive rings of streams posted to

    slot_table<read_job> jobs;        // ring of max_reads; chunks while in use
    uint32_t job_head = 0;            // ring of jobs in arrival order
    uint32_t job_count = 0;
    uint32_t job_tx = 0;              // offset from job_head of the job being sent

    path_list ack_queue;              // paths whose ACK is due now (ack_link)
    path_list retx_paths;             // paths with lost records to resend (retx_link)
    ack_block* acks = nullptr;        // the endpoint's ACK pool (block i at acks[i])
    nak_queue naks;
    wire::nak_reason fatal_reason = wire::nak_reason::invalid_request;
    uint32_t fatal_msn = 0;
    bool has_fatal = false;

    uint32_t probes_pending = 0;      // paths with probe_pending set
    uint32_t plane_probes = 0;        // bit per plane: a plane probe to send
    bool hello_pending = false;
    bool close_pending = false;
    uint64_t ctrl_deadline = k_no_deadline;
    uint32_t ctrl_retries = 0;
    uint32_t ctrl_route = 0;          // CONNECT/CLOSE resends by timer: each takes the next route (7.3)
    uint16_t hello_sport = 0;         // acceptor: the CONNECT's route, which its ACCEPT reflects (7.3)
    uint8_t hello_plane = 0;
    uint8_t hello_copy = 0;           // the CONNECT/ACCEPT copy to send next, 0: the original (7.3)
    uint32_t hello_answered_ts = 0;   // acceptor: timestamp of the CONNECT try its ACCEPT answers
    uint64_t hello_sent_ns = 0;       // when our last CONNECT or ACCEPT left; its copies carry it
    uint64_t hello_first_ns = 0;      // when the first CONNECT/ACCEPT of this phase left
    uint32_t hello_phase_retries = 0; // ctrl_retries then: more since means it was resent
    bool hello_phase_new = true;      // the next CONNECT/ACCEPT starts a phase
    uint64_t hs_rtt_ns = 0;           // CONNECT -> ACCEPT round trip, 0 if unknown (spec 5.6)
    uint64_t ack_deadline = k_no_deadline;
    int32_t last_ack_path = -1;       // path of the ACK sent last: the next ACK repeats its cum (3.6)
    // The receiver's view of loss (spec 3.6): the smoothed share of data arrivals that
    // were resends or copies (RETX), in loss_q's units and gain (up by 1/128 per such
    // arrival, down by 1/128 per packet an ACK acknowledges); while at least
    // k_copy_loss, each ACK also goes once more on another path's route.
    uint32_t rx_retx_q = 0;
    uint64_t rnr_deadline = k_no_deadline;
    uint64_t pace_next = 0;           // earliest time for the next new packet under a hint
    bool pace_wait = false;           // new data is waiting for pace_next
    uint32_t early_hint_mbps = 0;     // the share the peer told before our first ACK: its ACCEPT's
                                      // (spec 3.8) or a READ_REQ's (3.3); 0 = none
    uint32_t read_share_mbps = 0;     // our share for the peer's READ responses, told in our
                                      // latest READ_REQ (3.3); 0 = not shared, or no READ outstanding
    uint64_t read_req_at = k_no_deadline; // the slot the READ_REQ at the head reserved (read_req_due)
    uint8_t read_req_plane = 0;           // ... and its plane
    uint64_t last_rx = 0;             // when the peer was last heard (spec 7.8)
    uint64_t keepalive_next = k_no_deadline;
    uint64_t linger_deadline = k_no_deadline; // ERROR: freed by the engine then (spec 7.8)
    bool local_fault = false;         // a local buffer failed its check while sending
    bool free_pending = false;        // freed once its flush completions are all reported
    // The receive a failed SEND named: it completes with this status in the flush
    // (loc_prot_err: its buffer was deregistered; loc_len_err: it was too short).
    int32_t bad_recv_stream = k_nil;
    uint32_t bad_recv_seq = 0;
    wc_status bad_recv_status = wc_status::wr_flush_err;

    bool in_ready = false;
    bool in_ack_ready = false;
    bool pool_waiting = false;        // no chunk for a path's next PSN: woken when one is returned
    bool job_waiting = false;         // no job chunk for a READ to commit: woken when one is returned
    bool cq_blocked = false;
    uint64_t timer_deadline = k_no_deadline;
    // No path's rto_deadline or tlp_deadline is earlier (set_rto/set_tlp lower it;
    // conn_timer rescans the paths): recompute_timer need not scan them per packet.
    uint64_t path_deadline_lb = k_no_deadline;
    // The earliest of the connection's own deadlines above (ctrl, ack, rnr, keepalive,
    // pacing while waiting, linger), kept by refresh_deadlines() at every write, so
    // recompute_timer reads one field instead of six per packet.
    uint64_t conn_deadline = k_no_deadline;

    uint64_t tx_msgs_completed = 0;
    uint64_t rx_msgs_committed = 0;

    // Path p's block: the pool's sentinel (read only) while the path is settled.
    path_flight& fl(const path_tx& p) noexcept { return fls[p.blk]; }
    const path_flight& fl(const path_tx& p) const noexcept { return fls[p.blk]; }
    // Stream s (< sdir.size()): the pool's sentinel (read only) until claim_stream.
    stream_state& stream(uint32_t s) noexcept { return strs[sdir[s]]; }
    const stream_state& stream(uint32_t s) const noexcept { return strs[sdir[s]]; }
    uint32_t stream_slots() const noexcept { return uint32_t(sdir.size()); }
    // The ACK path r owes: the pool's sentinel (read only) while none is.
    ack_block& ack(const path_rx& r) noexcept { return acks[r.ack]; }
    const ack_block& ack(const path_rx& r) const noexcept { return acks[r.ack]; }
    // The lists' links (a path in retx_paths holds its block: it has records lost).
    auto retx_link() noexcept
    {
        return [this](uint32_t i) -> uint8_t& { return fl(ptx[i]).retx_next; };
    }
    auto tlp_link() noexcept
    {
        return [this](uint32_t i) -> uint8_t& { return ptx[i].tlp_next; };
    }
    auto ack_link() noexcept
    {
        return [this](uint32_t i) -> uint8_t& { return ack(prx[i]).next; };
    }
    // The RTT estimate of the plane path p is on now.
    plane_rtt& lane(const path_tx& p) noexcept
    {
        return plane_rtts[p.plane < plane_rtts.size() ? p.plane : 0];
    }
    // The record of psn on path p, sent and not yet below p.una.
    pkt_record& rec(const path_tx& p, uint32_t psn) noexcept
    {
        const path_flight& f = fl(p);
        return recs[size_t(f.dir[dir_slot(f, p, psn)]) * k_chunk_records + (psn & (k_chunk_records - 1))];
    }
    // The record of p.next_psn, whose chunk claim_next took.
    pkt_record& next_rec(const path_tx& p) noexcept
    {
        return recs[size_t(fl(p).tail) * k_chunk_records + (p.next_psn & (k_chunk_records - 1))];
    }
};

// The RTT a path assumes before its first sample: the handshake's if longer than the
// configured one (a long-haul peer), never shorter (its ACKs may queue behind a first
// window on a loaded link; timers that fire early resend what is not lost).
inline uint64_t first_rtt(const connection& c, uint64_t initial_rtt_ns) noexcept
{
    return c.hs_rtt_ns > initial_rtt_ns ? c.hs_rtt_ns : initial_rtt_ns;
}

// The RTT a path's tail probe assumes before the path's own first sample (spec 5.6):
// before the connection's first, the handshake's if known (a probe sent early costs one
// packet; one sent late stalls a connection whose blind first round trip, one packet,
// was lost), else first_rtt.
inline uint64_t probe_rtt(const connection& c, uint64_t initial_rtt_ns) noexcept
{
    return c.srtt_ns == 0 && c.hs_rtt_ns != 0 ? c.hs_rtt_ns : first_rtt(c, initial_rtt_ns);
}

// Under a hint R the receiver shares its link among its senders, each paced at its
// share: a packet may find one packet of every other sender ahead of it in the last-hop
// queue, which drains in about one gap at R (spec 5.6). Neither the probe nor the RTO
// may fire sooner than that on top of their round trips, before the first RTT sample
// (the first packets of many senders all queue at once) and after it (a path's samples
// are few and old when each sender has a packet out every few gaps).
// Until the first ACK the share is the one the peer told first (its ACCEPT or a READ_REQ).
// While READ responses are owed to us, our packets' ACKs come back through our own last
// hop behind a packet of every responder we share it with: the gap at the share our
// READ_REQ told counts too (the longer of the two: one of them is usually unshared).
inline uint64_t hint_queue_ns(const connection& c, uint32_t frame_overhead) noexcept
{
    uint32_t hint = c.cc.acked ? c.cc.rate_hint_mbps : c.early_hint_mbps;
    if (c.read_share_mbps != 0) {
        hint = hint == 0 ? c.read_share_mbps : std::min(hint, c.read_share_mbps);
    }
    if (hint == 0) {
        return 0;
    }
    return (uint64_t(c.mtu) + frame_overhead) * 8000 / hint;
}

// The message `msn` failed a check for `reason`: later packets of the peer are NAKed
// with it (spec 7.5) once the connection is in ERROR.
inline void mark_fatal(connection& c, wire::nak_reason reason, uint32_t msn) noexcept
{
    c.has_fatal = true;
    c.fatal_reason = reason;
    c.fatal_msn = msn;
}

// After any write of ctrl_deadline, ack_deadline, rnr_deadline, keepalive_next,
// pace_next/pace_wait or linger_deadline.
inline void refresh_deadlines(connection& c) noexcept
{
    const uint64_t d = std::min(std::min(c.ctrl_deadline, c.ack_deadline), std::min(c.rnr_deadline, c.keepalive_next));
    c.conn_deadline = std::min(d, std::min(c.pace_wait ? c.pace_next : k_no_deadline, c.linger_deadline));
}

// After every call into the congestion controller: the windows' integer forms (p's
// block must be held: the sentinel is never written).
inline void refresh_windows(connection& c, path_tx& p) noexcept
{
    path_flight& f = c.fl(p);
    f.win_room = window_room(f.cc.cwnd);
    c.win_room = window_room(effective_cwnd(c.cc));
}

inline void refresh_windows(connection& c) noexcept
{
    c.win_room = window_room(effective_cwnd(c.cc));
}

// A CONNECT or ACCEPT to send, and its copies after it (spec 7.3).
inline void queue_hello(connection& c) noexcept
{
    c.hello_pending = true;
    c.hello_copy = 0;
}

// The next message to packetize (produce_new).
inline void advance_tx(connection& c) noexcept
{
    // Still tx_msn % sq.size() when the msn wraps (2^32 need not be a multiple of it).
    c.tx_slot = ++c.tx_msn == 0 || c.tx_slot + 1 == c.sq.size() ? 0 : c.tx_slot + 1;
    c.tx_admitted = false;
}

// Every write of a path deadline goes through these, so path_deadline_lb stays a
// lower bound of them all.
inline void set_rto(connection& c, path_tx& p, uint64_t deadline) noexcept
{
    c.fl(p).rto_deadline = deadline;
    c.path_deadline_lb = std::min(c.path_deadline_lb, deadline);
}

inline void set_tlp(connection& c, path_tx& p, uint64_t deadline) noexcept
{
    c.fl(p).tlp_deadline = deadline;
    c.path_deadline_lb = std::min(c.path_deadline_lb, deadline);
}

// The next new packet goes on the connection's first path of `plane` (if any).
inline void start_on_plane(connection& c, uint8_t plane) noexcept
{
    for (uint32_t i = 0; i < c.paths; ++i) {
        if (c.ptx[i].plane == plane) {
            c.rr_path = i;
            return;
        }
    }
}

inline void set_rack(connection& c, uint64_t deadline) noexcept
{
    c.rack_deadline = deadline;
    c.path_deadline_lb = std::min(c.path_deadline_lb, deadline);
}

// Lost records are found again by scanning from retx_from (produce_retx), so a path
// keeps no queue of PSNs: only the lowest one queued since its last scan.
inline void queue_retx(connection& c, uint32_t path, uint32_t psn) noexcept
{
    path_tx& p = c.ptx[path];
    c.rec(p, psn).state = rec_state::lost;
    path_flight& f = c.fl(p);
    if (!p.in_retx_list) {
        f.retx_from = psn;
        c.retx_paths.push(path, c.retx_link());
        p.in_retx_list = true;
    } else if (seq_lt(psn, f.retx_from)) {
        f.retx_from = psn;
    }
}

// Calls f(psn, record) for every PSN of path p in [from, to) (sent, not below una),
// a chunk at a time: one directory look-up per 16 records.
template <typename F>
inline void for_records(connection& c, const path_tx& p, uint32_t from, uint32_t to, F&& f) noexcept
{
    while (from != to) {
        pkt_record* r = &c.rec(p, from);
        const uint32_t n = std::min(k_chunk_records - (from & (k_chunk_records - 1)), to - from);
        for (uint32_t i = 0; i < n; ++i) {
            f(from + i, r[i]);
        }
        from += n;
    }
}

inline void requeue_in_flight(connection& c, uint32_t path) noexcept
{
    path_tx& p = c.ptx[path];
    for_records(c, p, p.una, p.next_psn, [&](uint32_t psn, pkt_record& r) {
        if (r.state == rec_state::in_flight) {
            queue_retx(c, path, psn);
        }
    });
}

} // namespace metaroce::detail
