// endpoint::impl is split by role, as rxe splits its engine:
//   endpoint.cpp    scheduling, timers, completion and event queues
//   conn_setup.cpp  CONNECT/ACCEPT/CLOSE, negotiation, teardown and error flush
//   requester.cpp   posting sends, building data packets (new and retransmitted);
//                   poll_tx and produce (send dispatch), with produce_new inlined
//   responder.cpp   receiving data: window, checks, placement, commit, ACK/NAK out;
//                   on_packet (receive dispatch), with on_data inlined into it
//   completer.cpp   ACK/NAK in: SACK, loss detection, RTT, CC, RTO, completions
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "connection.hpp"
#include "fixed_ring.hpp"
#include "metaroce/congestion.hpp"
#include "metaroce/endpoint.hpp"
#include "metaroce/rate_allocator.hpp"
#include "record_pool.hpp"
#include "sge_pool.hpp"

namespace metaroce {

using detail::connection;

// Replies that need no connection state: COOKIE, CLOSE_ACK, PROBE_ACK (spec 7.6).
struct ctrl_reply {
    wire::opcode op{};
    uint32_t dst_addr = 0;
    uint32_t dst_conn = 0;
    uint32_t src_conn = 0;
    uint8_t plane = 0;
    uint8_t path = 0;
    uint16_t udp_sport = 0;
    uint32_t token = 0;               // CLOSE_ACK, PROBE_ACK: echoed
    uint32_t ts_echo = 0;
    uint64_t nonce = 0;               // COOKIE
    uint64_t cookie = 0;
};

struct plane_health {
    bool admin_up = true;
    bool detected_up = true;
    uint32_t timeouts_since_progress = 0;
    uint64_t timeouts = 0;
    uint64_t downs = 0;
    uint64_t probes_sent = 0;
};

struct timer_entry {
    uint64_t deadline;
    conn_id conn;
    bool operator>(const timer_entry& o) const noexcept { return deadline > o.deadline; }
};

struct endpoint::impl {
    explicit impl(const endpoint_config& c);

    endpoint_config cfg;
    mr_table mrs;
    detail::sge_pool sges;
    detail::record_pool records;                    // in-flight packet records, all connections
    detail::flight_pool flights;                    // busy paths' directories (path_flight)
    detail::sack_pool sacks;                        // SACK bitmaps of paths with a hole open
    detail::ack_pool acks;                          // what the ACK a receiving path owes reports
    detail::stream_pool stream_recs;                // the state of streams in use
    detail::nak_pool nak_rings;                     // NAKs waiting to be sent, one ring per connection
    std::vector<uint32_t> pool_waiters;             // slots of connections waiting for a chunk
    detail::chunk_pool<detail::send_slot, detail::k_slots_per_chunk> send_slots; // all connections'
    detail::chunk_pool<detail::recv_slot, detail::k_slots_per_chunk> recv_slots;
    detail::log_pool logs;                          // RACK send logs
    detail::chunk_pool<detail::read_job, detail::k_slots_per_chunk> job_slots; // READs being answered
    std::vector<uint32_t> job_waiters;              // slots of connections waiting for a job chunk
    ecn_aimd cc;
    counters stats;
    rate_allocator rates;
    uint64_t rng_state;
    uint64_t cookie_key[2];                         // secret: SipHash key of handshake cookies
    detail::coverage_key coverage_key;              // secret: keyed sums of packet indexes
    uint64_t clock = 0;                             // the time handed in by the current call
    uint32_t busy_planes = 0;                       // the current poll_tx's tx_frame::busy_planes
    uint64_t read_req_next = 0;                     // the next READ_REQ's slot (read_req_due)
    uint32_t read_req_slots = 0;                    // slots handed out (their planes go in turn)

    std::vector<std::unique_ptr<connection>> conns;
    std::vector<uint16_t> generation;
    uint64_t conns_freed = 0;                       // a handler that saw it unchanged kept its connection
    std::vector<uint32_t> free_slots;
    std::unordered_map<uint64_t, conn_id> by_peer; // (peer addr, peer conn) -> local

    detail::fixed_ring<uint32_t> ready;             // connection indexes with work to send
    detail::fixed_ring<uint32_t> ack_ready;         // ...with ACKs or NAKs to send: served first
    uint32_t acks_in_row = 0;                       // from ack_ready since the last data packet
    // ACKs sent in a row ahead of waiting data (spec 5.4): 64 ACKs take about the wire time
    // of two 4 KiB data packets, so data keeps a third of the link whatever the peers make
    // us ACK. 16 held ACKs back in bursts on the 8-plane run (a receiver ACKs nearly every packet).
    static constexpr uint32_t k_ack_burst = 64;
    // The copy of the ACK built last under loss, the next frame produce_ack_first sends (spec 3.6):
    // the same bytes but BTH.plane, on another path's reply route. len 0: none.
    struct ack_copy {
        std::array<uint8_t, sizeof(wire::bth) + sizeof(wire::ack_header)> bytes{};
        uint8_t len = 0;
        uint8_t plane = 0;
        uint16_t udp_sport = 0;
        uint32_t dst_addr = 0;
    } ack_copy;
    detail::fixed_ring<ctrl_reply> replies;
    detail::fixed_ring<completion> cq;
    detail::fixed_ring<conn_event> events;
    detail::fixed_ring<recv_wanted> wanted;         // RNR for want of a posted receive
    std::vector<uint32_t> cq_waiters;
    std::vector<timer_entry> timers;                // min-heap
    // The headers of the request packet built last (build_from_record): the next packet
    // of the same message copies them and rewrites the per-packet fields only.
    struct tx_header_cache {
        conn_id conn = k_no_conn;
        uint32_t msn = 0;
        uint32_t peer_conn = 0;
        size_t len = 0;
        uint8_t bytes[wire::k_max_data_header] = {};
    } tx_hdr;
    std::vector<plane_health> plane_tab;
    uint64_t plane_probe_deadline = k_no_deadline;
    uint32_t probe_cursor = 0;

    // endpoint.cpp
    uint64_t random64() noexcept;
    connection* find(conn_id id) noexcept;
    void mark_ready(connection& c) noexcept;
    void arm(connection& c, uint64_t deadline);
    bool push_cq(connection& c, const completion& wc) noexcept;
    void push_event(conn_event::kind k, const connection& c) noexcept;
    bool produce(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool produce_ack_first(uint64_t now, tx_frame& f) noexcept;
    bool produce_ack_copy(tx_frame& f) noexcept;
    void keep_ack_copy(connection& c, uint32_t path, const tx_frame& f) noexcept;
    void conn_timer(connection& c, uint64_t now) noexcept;
    void recompute_timer(connection& c, uint64_t now) noexcept;
    bool liveness_timer(connection& c, uint64_t now) noexcept;
    void heard_from_peer(connection& c, uint64_t now) noexcept;
    void resume_cq_waiters() noexcept;
    // Record chunks (endpoint.cpp): see record_pool.hpp and path_tx::dir.
    bool has_record_room(const connection& c, const detail::path_tx& p) const noexcept;
    detail::pkt_record& claim_next(connection& c, detail::path_tx& p, bool& fresh) noexcept;
    void advance_una(connection& c, detail::path_tx& p, uint32_t to) noexcept;
    void return_chunks(connection& c, detail::path_tx& p, uint32_t passed) noexcept;
    void release_records(connection& c) noexcept;
    // Path blocks (path_flight): taken by claim_next, given back by park() once settled.
    bool settled(const connection& c, const detail::path_tx& p) const noexcept;
    void park(connection& c, detail::path_tx& p) noexcept;
    void park_all(connection& c) noexcept;
    void drop_block(connection& c, detail::path_tx& p) noexcept;
    void wait_for_records(connection& c) noexcept;
    void wake_pool_waiters() noexcept;
    // Message slot chunks (endpoint.cpp): slot i of a table is usable once claimed; the
    // chunk goes back when its last claimed slot is released.
    template <typename T>
    bool claim_slot(detail::chunk_pool<T, detail::k_slots_per_chunk>& pool, detail::slot_table<T>& t,
                    uint32_t i) noexcept;
    template <typename T>
    void release_slot(detail::chunk_pool<T, detail::k_slots_per_chunk>& pool, detail::slot_table<T>& t,
                      uint32_t i) noexcept;
    bool claim_recv_slot(connection& c, uint32_t i, bool next_to_commit) noexcept;
    void release_slots(connection& c) noexcept;
    void log_sent(connection& c, const detail::sent_entry& e) noexcept;
    void fill_frame_route(const connection& c, uint8_t plane, uint16_t sport, tx_frame& f) const noexcept;
    wire::bth_fields bth_for(const connection& c, wire::opcode op, uint8_t path, uint8_t plane,
                             uint64_t now) const noexcept;

    // conn_setup.cpp
    connection* create_conn(uint32_t peer_addr, bool incoming);
    void init_paths(connection& c, uint32_t peer_isn);
    uint64_t make_cookie(uint32_t addr, uint32_t src_conn, uint64_t nonce, uint64_t bucket) const noexcept;
    bool cookie_valid(uint32_t addr, const wire::hello_header& h, uint64_t now) const noexcept;
    void on_connect(const rx_meta& m, const wire::packet_view& p, uint64_t now);
    void on_cookie(connection& c, const wire::packet_view& p, uint64_t now);
    void on_accept(connection& c, const wire::packet_view& p, uint64_t now);
    void on_close(const rx_meta& m, const wire::packet_view& p, uint64_t now);
    void on_close_ack(connection& c, const wire::packet_view& p);
    void on_probe(const rx_meta& m, const wire::packet_view& p, uint64_t now);
    bool produce_ctrl(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool produce_reply(uint64_t now, tx_frame& f) noexcept;
    // Returns false if the connection was freed.
    bool ctrl_timer(connection& c, uint64_t now) noexcept;
    void enter_error(connection& c, wc_status first) noexcept;
    void flush(connection& c) noexcept;
    void flush_recvs(connection& c) noexcept;
    void free_conn(connection& c) noexcept;
    uint16_t path_entropy(const connection& c, uint32_t path, uint32_t epoch) const noexcept;

    // path_health.cpp
    bool plane_usable(uint8_t plane) const noexcept;
    uint8_t pick_plane(const connection& c, uint8_t from, bool skip_from) const noexcept;
    void reroute(connection& c, uint32_t path, uint8_t plane) noexcept;
    void admit_paths(connection& c) noexcept;
    // RFC 6298: smoothed RTT plus four deviations, within [min_rto, max_rto]
    // (sampled: the path has an RTT sample).
    uint64_t sampled_rto(const detail::path_flight& f) const noexcept
    {
        return std::clamp<uint64_t>(uint64_t(f.srtt_ns) + 4 * uint64_t(f.rttvar_ns), cfg.transport.min_rto_ns,
                                    cfg.transport.max_rto_ns);
    }
    // Three first RTTs before the path's first sample.
    uint64_t path_rto(const connection& c, const detail::path_flight& f) const noexcept
    {
        const transport_config& t = cfg.transport;
        return f.srtt_ns != 0 ? sampled_rto(f)
                              : std::clamp<uint64_t>(3 * detail::first_rtt(c, t.initial_rtt_ns), t.min_rto_ns, t.max_rto_ns);
    }
    void request_probe(connection& c, uint32_t path) noexcept;
    void path_progress(connection& c, detail::path_tx& p, uint64_t now) noexcept; // inline, below
    void route_limit(connection& c, detail::path_flight& f, uint16_t rx, uint16_t ce, uint32_t newly,
                     uint32_t rtt) noexcept; // inline, below
    bool path_timeout(connection& c, uint32_t path, uint64_t now) noexcept;
    void move_off_plane(uint8_t plane, uint64_t now) noexcept;
    void move_home(uint8_t plane) noexcept;
    void plane_probe_timer(uint64_t now) noexcept;
    bool produce_probe(connection& c, uint64_t now, tx_frame& f) noexcept;
    void on_probe_ack(connection& c, const rx_meta& m, const wire::packet_view& p, uint64_t now) noexcept;

    // Local memory of a work request (local_memory.cpp): its single piece, or its
    // list when list is not k_none. Each piece of bytes [off, off + len) is checked
    // under its lkey before it is copied; nothing is copied past a piece that fails.
    mr_check gather(const sge& one, int32_t list, uint64_t off, uint32_t len, uint8_t* to) noexcept;
    // gather() of a request with no list (one piece), inline: every packet sent takes it.
    mr_check gather_one(const sge& one, uint64_t off, uint32_t len, uint8_t* to) noexcept;
    // gather_one() of a request's own piece: its whole range is checked once per region
    // epoch (mr_table::epoch), and each packet then only resolves its address.
    mr_check gather_msg(detail::send_slot& s, uint64_t off, uint32_t len, uint8_t* to) noexcept;
    bool check_msg(detail::send_slot& s) noexcept;
    bool check_msg(detail::recv_slot& rs) noexcept;
    // The region epoch wrapped: no slot may keep one.
    void forget_mr_tags() noexcept;
    // The same bytes by reference into f.payload (zero copy); fits is false, and nothing
    // is set, when they span more pieces than a frame can describe.
    mr_check gather_refs(const sge& one, int32_t list, uint64_t off, uint32_t len, tx_frame& f, bool& fits) noexcept;
    mr_check scatter(const sge& one, int32_t list, uint64_t off, std::span<const uint8_t> from) noexcept;
    // Checks a posted gather/scatter list piece by piece; *total is its length.
    // A work request's list: its shape, its total and (`keys`) every piece's key, rights
    // and bounds.
    post_result check_list(const sge* l, uint32_t n, uint32_t need, uint64_t& total, bool keys = true) noexcept;
    // A receive is consumed (completed or flushed): its list goes back to the pool.
    void consume_recv(detail::stream_state& ss) noexcept;
    uint32_t withdraw_recvs(connection& c, uint16_t stream) noexcept;
    uint32_t orphan_sends(connection& c, uint16_t stream);
    void drop_orphans(connection& c, bool all) noexcept;
    void release_lists(connection& c) noexcept;

    // requester.cpp
    post_result post_send(connection& c, const send_wr& wr, uint64_t now);
    bool produce_retx(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool produce_copy(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool copy_delivered(connection& c, const detail::pkt_record& r, uint32_t ts_echo, uint64_t now) noexcept;
    bool produce_read_resp(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool produce_new(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool read_req_due(connection& c, const detail::send_slot& s, uint64_t now) noexcept;
    void take_read_hint(connection& c, uint32_t mbps, uint8_t plane) noexcept;
    int pick_path(connection& c, uint64_t now) noexcept;
    int pick_path_scan(connection& c, uint64_t now) noexcept;
    // `slot`: the request's send slot when the caller has it (new data), else looked up.
    // `copy`: a proactive copy (spec 5.10), sent on the route (plane, sport) given; it
    // leaves the record (send time, transmit number, ack_req), the log and the timers.
    bool build_from_record(connection& c, uint32_t path, uint32_t psn, uint64_t now, tx_frame& f,
                           bool retx, detail::send_slot* slot = nullptr, bool copy = false,
                           uint8_t route_plane = 0, uint16_t route_sport = 0) noexcept;
    bool send_new(connection& c, uint32_t path, detail::rec_kind kind, uint16_t slot, uint32_t msn,
                  uint32_t offset, uint16_t len, uint64_t now, tx_frame& f, detail::send_slot* sp = nullptr) noexcept;

    // responder.cpp
    struct place_outcome {
        bool ok = true;
        wire::nak_reason reason = wire::nak_reason::invalid_request;
    };
    place_outcome place(connection& c, detail::recv_slot& rs, detail::stream_state& ss,
                        const wire::packet_view& p) noexcept;
    post_result post_recv(connection& c, uint16_t stream, const recv_wr& wr);
    void on_data(connection& c, const rx_meta& m, const wire::packet_view& p, uint64_t now) noexcept;
    bool produce_nak(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool produce_ack(connection& c, uint64_t now, tx_frame& f) noexcept;
    bool build_ack(connection& c, uint64_t now, tx_frame& f) noexcept;
    void queue_ack(connection& c, uint32_t path) noexcept;
    void queue_held_ack(connection& c, uint32_t path, detail::ack_block& a) noexcept;
    bool owe_ack(detail::path_rx& r) noexcept;
    bool claim_stream(connection& c, uint32_t stream) noexcept;
    void settle_ack(detail::path_rx& r) noexcept;
    void give_ack(detail::path_rx& r, detail::ack_block& a) noexcept;
    void flush_delayed_acks(connection& c) noexcept;
    void push_shares() noexcept;
    uint32_t loss_slack(const connection& c, uint32_t path) const noexcept;
    void try_commit(connection& c, uint16_t stream) noexcept;
    void on_job_done(connection& c) noexcept;
    void wait_for_jobs(connection& c) noexcept;
    void wake_job_waiters() noexcept;
    bool release_job(connection& c, uint32_t i) noexcept;
    void release_jobs(connection& c) noexcept;
    void fail_read_job(connection& c, detail::read_job& j, mr_check why) noexcept;

    // completer.cpp
    void on_ack(connection& c, const wire::packet_view& p, uint64_t now) noexcept;
    void on_also_cum(connection& c, uint8_t own_path, uint32_t also_cum) noexcept;
    bool settle_also(connection& c, uint32_t path, uint64_t now) noexcept;
    void rearm_path_timers(connection& c, detail::path_tx& p, uint64_t now) noexcept;
    void rack_delivered(connection& c, const detail::pkt_record& r, uint32_t ts_echo, uint64_t now) noexcept;
    void resend_delivered(connection& c, const detail::pkt_record& r, uint32_t ts_echo, uint64_t now) noexcept;
    void rack_detect(connection& c, uint64_t now) noexcept;
    void tail_probe(connection& c, uint32_t path, uint64_t now, bool allow_new) noexcept;
    bool new_data_ready(const connection& c) const noexcept;
    void on_nak(connection& c, const wire::packet_view& p, uint64_t now) noexcept;
    void path_timeouts(connection& c, uint64_t now) noexcept;
    void rnr_timer(connection& c, uint64_t now) noexcept;
    void credit(connection& c, detail::rec_kind kind, uint16_t slot, uint32_t msn, uint32_t n) noexcept;
    // Acknowledged records in order, credited a message at a time (on_ack, settle_also).
    struct run_credit {
        detail::rec_kind kind{};
        uint16_t slot = 0;
        uint32_t msn = 0;
        uint32_t n = 0;
        void add(impl& e, connection& c, const detail::pkt_record& r) noexcept
        {
            if (n != 0 && (r.msn != msn || r.slot != slot || r.kind != kind)) {
                flush(e, c);
            }
            kind = r.kind;
            slot = r.slot;
            msn = r.msn;
            ++n;
        }
        void flush(impl& e, connection& c) noexcept
        {
            if (n != 0) {
                e.credit(c, kind, slot, msn, n);
                n = 0;
            }
        }
    };
    void try_complete(connection& c, uint16_t stream) noexcept;
    void on_read_resp_landed(connection& c, detail::send_slot& s) noexcept;
    bool land_read_resp(connection& c, const wire::packet_view& p) noexcept;
};

// The per-packet helpers, inline: they run several times for every packet.

inline connection* endpoint::impl::find(conn_id id) noexcept
{
    const uint32_t i = detail::slot_of(id);
    if (i >= conns.size() || !conns[i] || conns[i]->id != id) {
        return nullptr;
    }
    return conns[i].get();
}

inline void endpoint::impl::mark_ready(connection& c) noexcept
{
    if (!c.in_ready) {
        c.in_ready = ready.push(detail::slot_of(c.id));
    }
}

// True when path p may send its next PSN: its chunk is held or one can be taken.
inline bool endpoint::impl::has_record_room(const connection& c, const detail::path_tx& p) const noexcept
{
    return c.fl(p).tail != detail::record_pool::k_nil ||
           (!records.empty() && (p.blk != flights.sentinel() || !flights.empty()));
}

// The record of p.next_psn, its chunk taken now if not held yet (fresh).
// has_record_room() said there is one.
inline detail::pkt_record& endpoint::impl::claim_next(connection& c, detail::path_tx& p, bool& fresh) noexcept
{
    if (p.blk == flights.sentinel()) {
        // A settled path sends: it takes its block (has_record_room saw one free) and
        // starts it from the summary it kept.
        p.blk = flights.take();
        ++c.blk_held;
        detail::path_flight& f = c.fl(p);
        f.highest_sacked_xmit = p.xmit_counter; // nothing sent after this was SACKed
        f.retx_from = f.also_cum = p.una;
        f.srtt_ns = detail::unpack16(p.srtt_q);
        f.rttvar_ns = detail::unpack16(p.rttvar_q);
        f.min_rtt_ns = detail::unpack16(p.min_rtt_q);
        f.rto_ns = path_rto(c, f);
        f.cc.cwnd = detail::unpack_cwnd(p.cwnd_q); // the rest of the round state starts afresh
        f.cc.alpha = detail::unpack_alpha(p.alpha_q);
        f.win_room = window_room(f.cc.cwnd);
        f.route_win = uint32_t(p.route_lim_q) << 8;
    }
    detail::path_flight& f = c.fl(p);
    fresh = f.tail == detail::record_pool::k_nil;
    if (fresh) {
        f.tail = records.take();
        f.dir[detail::dir_slot(f, p, p.next_psn)] = f.tail;
    }
    return c.next_rec(p);
}

// Moves p.una to `to` (acknowledged, at most a window on): chunks una left, and una's
// own once nothing is outstanding, go back to the pool.
inline void endpoint::impl::advance_una(connection& c, detail::path_tx& p, uint32_t to) noexcept
{
    const uint32_t passed = ((to >> detail::k_chunk_shift) - (p.una >> detail::k_chunk_shift)) & detail::k_chunk_no_mask;
    p.una = to;
    if (passed != 0) {
        return_chunks(c, p, passed); // once per 16 packets
    }
    uint16_t& d = c.fl(p).dir[c.fl(p).dir_head];
    if (to == p.next_psn && d != detail::record_pool::k_nil) {
        records.give(d); // an idle path holds nothing
        d = c.fl(p).tail = detail::record_pool::k_nil;
        if (!pool_waiters.empty()) {
            wake_pool_waiters();
        }
    }
}

template <typename T>
inline bool endpoint::impl::claim_slot(detail::chunk_pool<T, detail::k_slots_per_chunk>& pool,
                                       detail::slot_table<T>& t, uint32_t i) noexcept
{
    uint16_t& d = t.dir[i >> detail::k_slot_shift];
    if (d == pool.sentinel()) {
        d = pool.take();
        if (d == pool.sentinel()) {
            ++stats.slot_pool_waits;
            return false;
        }
    }
    ++pool.aux(d);
    return true;
}

template <typename T>
inline void endpoint::impl::release_slot(detail::chunk_pool<T, detail::k_slots_per_chunk>& pool,
                                         detail::slot_table<T>& t, uint32_t i) noexcept
{
    uint16_t& d = t.dir[i >> detail::k_slot_shift];
    if (--pool.aux(d) == 0) {
        pool.give(d);
        d = pool.sentinel();
    }
}

// Chunks kept back for the message each stream must commit next (spec 4.5): later
// messages of many streams and connections could otherwise hold every chunk while the
// one they all wait behind finds none.
inline bool endpoint::impl::claim_recv_slot(connection& c, uint32_t i, bool next_to_commit) noexcept
{
    const uint32_t reserve = std::max<uint32_t>(1, recv_slots.capacity() / 16);
    if (!next_to_commit && c.rslots.dir[i >> detail::k_slot_shift] == recv_slots.sentinel() &&
        recv_slots.free_chunks() <= reserve) {
        ++stats.slot_pool_waits;
        return false;
    }
    return claim_slot(recv_slots, c.rslots, i);
}

inline void endpoint::impl::log_sent(connection& c, const detail::sent_entry& e) noexcept
{
    if (!c.sent_order.push(logs, e)) {
        ++stats.send_log_misses;
    }
}

// Settled: nothing outstanding, no timer armed, no timeouts, RACK strikes or resends
// pending (a route limit is kept in the summary, spec 5.3), not failed or suspect (their
// probes and RTOs run on the block), nothing queued for it. A congested path may settle: the state only shows (pick_path clears it).
inline bool endpoint::impl::settled(const connection& c, const detail::path_tx& p) const noexcept
{
    const detail::path_flight& f = c.fl(p);
    return p.una == p.next_psn && f.rto_deadline == k_no_deadline && f.tlp_deadline == k_no_deadline &&
           f.timeouts == 0 && f.stalls == 0 && f.rack_strikes == 0 && p.state != path_state::failed &&
           p.state != path_state::suspect && !p.probe_pending && !p.in_retx_list && !p.tlp_new && !p.ack_req_next;
}

// Gives p's block back once settled, keeping the summary its next block starts from.
inline void endpoint::impl::park(connection& c, detail::path_tx& p) noexcept
{
    if (p.blk != flights.sentinel() && settled(c, p)) {
        drop_block(c, p);
        if (!pool_waiters.empty()) {
            wake_pool_waiters(); // a path starved of a block (record_pool_waits) may send now
        }
    }
}

// r owes an ACK from now: its block, taken if it had none; false (counted) when none is free.
inline bool endpoint::impl::owe_ack(detail::path_rx& r) noexcept
{
    if (r.ack == acks.sentinel()) [[unlikely]] {
        r.ack = acks.take();
        if (r.ack == acks.sentinel()) {
            ++stats.ack_pool_waits;
            return false;
        }
    }
    return true;
}

// Stream s's record, taken at its first use; false (slot_pool_waits) when none is free.
inline bool endpoint::impl::claim_stream(connection& c, uint32_t s) noexcept
{
    uint16_t& d = c.sdir[s];
    if (d == stream_recs.sentinel()) [[unlikely]] {
        d = stream_recs.take();
        if (d == stream_recs.sentinel()) {
            ++stats.slot_pool_waits;
            return false;
        }
    }
    return true;
}

// r's block a goes back (r holds one): reset, as the pool keeps blocks idle.
inline void endpoint::impl::give_ack(detail::path_rx& r, detail::ack_block& a) noexcept
{
    a = detail::ack_block{};
    acks.give(r.ack);
    r.ack = acks.sentinel();
}

// r's block goes back if no ACK is owed after all (neither queued nor delayed).
inline void endpoint::impl::settle_ack(detail::path_rx& r) noexcept
{
    detail::ack_block& a = acks.base()[r.ack];
    if (r.ack != acks.sentinel() && !a.queued && !a.delayed) {
        give_ack(r, a);
    }
}

// Unconditionally (teardown, flush): the block must hold no record chunk.
inline void endpoint::impl::drop_block(connection& c, detail::path_tx& p) noexcept
{
    if (p.blk == flights.sentinel()) {
        return;
    }
    const detail::path_flight& f = c.fl(p);
    p.srtt_q = detail::pack16(f.srtt_ns);
    p.rttvar_q = detail::pack16(f.rttvar_ns);
    p.min_rtt_q = detail::pack16(f.min_rtt_ns);
    p.cwnd_q = detail::pack_cwnd(f.cc.cwnd);
    p.alpha_q = detail::pack_alpha(f.cc.alpha);
    p.route_lim_q = uint8_t(std::min<uint32_t>(f.route_win >> 8, 15)) & 15u;
    c.settled_tx += f.tx_packets;
    c.settled_retx += f.retransmits;
    flights.give(p.blk);
    p.blk = flights.sentinel();
    --c.blk_held;
}

inline void endpoint::impl::park_all(connection& c) noexcept
{
    // Most calls find one path or none holding a block (a ping-pong's ACK parks its own
    // path first): no walk over every path then.
    for (uint32_t i = 0, held = c.blk_held; held != 0 && i < c.ptx.size(); ++i) {
        detail::path_tx& p = c.ptx[i];
        if (p.blk != flights.sentinel()) {
            --held;
            park(c, p);
        }
    }
}

inline void endpoint::impl::arm(connection& c, uint64_t deadline)
{
    if (deadline >= c.timer_deadline) {
        return; // an earlier entry is queued; it will re-arm for later work
    }
    c.timer_deadline = deadline;
    timers.push_back({deadline, c.id});
    std::push_heap(timers.begin(), timers.end(), std::greater<>{});
}

inline void endpoint::impl::fill_frame_route(const connection& c, uint8_t plane, uint16_t sport,
                                             tx_frame& f) const noexcept
{
    f.dst_addr = c.peer_addr;
    f.plane = plane;
    f.udp_sport = sport;
    f.ect = true;
}

inline wire::bth_fields endpoint::impl::bth_for(const connection& c, wire::opcode op, uint8_t path,
                                                uint8_t plane, uint64_t now) const noexcept
{
    wire::bth_fields b;
    b.op = op;
    b.dst_conn = c.peer_conn;
    b.path = path;
    b.plane = plane;
    b.tx_ts = uint32_t(now);
    return b;
}

inline void endpoint::impl::recompute_timer(connection& c, uint64_t now) noexcept
{
    // This runs after every packet in or out: the connection's own deadlines are kept
    // folded in conn_deadline (refresh_deadlines), the paths' bounded by path_deadline_lb.
    uint64_t d = c.conn_deadline;
    // Path timers mean something only while data can move: after a close or an error
    // they are cleared, and a stale one must never keep the timer firing.
    // The bound may be earlier than every path deadline still set (one was pushed back
    // or cleared since): that only fires the timer early, which arm() did anyway (it
    // never moves an entry later), and conn_timer then rescans.
    if (c.state == conn_state::established) {
        d = std::min(d, c.path_deadline_lb);
    }
    // Usually an entry at or before d is queued already: arm() would return at once
    // (this also covers d == k_no_deadline, no earlier than any entry).
    if (d < c.timer_deadline) {
        // Never at or before `now`: on_timer(now) must run out of due work and return
        // even if some deadline was not cleared by its handler.
        arm(c, std::max(d, now + 1));
    }
}

inline mr_check endpoint::impl::gather_one(const sge& one, uint64_t off, uint32_t len, uint8_t* to) noexcept
{
    uint8_t* host = nullptr;
    const mr_check mc = mrs.check_local(one.lkey, one.addr + off, len, 0, &host);
    if (mc == mr_check::ok && len > 0) {
        std::memcpy(to, host, len);
    }
    return mc;
}

inline mr_check endpoint::impl::gather_msg(detail::send_slot& s, uint64_t off, uint32_t len, uint8_t* to) noexcept
{
    if (s.mr_tag != mrs.epoch() && !check_msg(s)) [[unlikely]] {
        return gather_one(s.wr.local, off, len, to); // not valid whole: each packet as before
    }
    if (len > 0) {
        std::memcpy(to, mrs.host_at(s.wr.local.lkey, s.wr.local.addr + off), len);
    }
    return mr_check::ok;
}

// New data could go out now (what produce_new and produce_read_resp would send first).
// Inline: every ACK asks. tx_slot and tx_admitted are produce_new's own: the slot of
// tx_msn, and the peer's message window already found open for it.
inline bool endpoint::impl::new_data_ready(const connection& c) const noexcept
{
    if (c.inflight >= c.win_room) {
        return false;
    }
    if (c.job_tx < c.job_count) {
        return true;
    }
    if (c.tx_msn == c.next_msn) {
        return false;
    }
    const detail::send_slot& s = c.sq[c.tx_slot];
    if (!s.in_use || s.msn != c.tx_msn || s.done || s.fully_sent) {
        return false;
    }
    if (c.tx_admitted) {
        return true;
    }
    const uint32_t older = c.tx_msn - c.max_msgs;
    const detail::send_slot& o = c.sq[older % c.sq.size()];
    return !(o.in_use && o.msn == older);
}

// Data (not a probe) got through on this path: the only thing that clears a stall.
// (path_health.cpp's; inline here: every ACK that settles something calls it.)
inline void endpoint::impl::path_progress(connection& c, detail::path_tx& p, uint64_t now) noexcept
{
    c.fl(p).timeouts = 0;
    c.fl(p).stalls = 0;
    c.fl(p).rack_strikes = 0;
    c.fl(p).spell_probes = 0;
    if (p.state != path_state::congested || now >= c.fl(p).congested_until) {
        p.state = path_state::good;
    }
    if (p.plane < plane_tab.size()) {
        plane_tab[p.plane].timeouts_since_progress = 0;
    }
}

// A paced connection's path whose own route is full (spec 5.3): an ACK mostly CE-marked,
// on a connection paced by a hint, whose RTT sample sits more than k_route_queue times
// the connection's mean queueing above its smallest RTT (a bottleneck its paths share
// marks and delays them alike, and the connection window answers that) limits the path
// to one new packet out. It then earns one more
// packet out per round trip of unmarked ACKs (route_win counts 1/256 packets), until the
// limit reaches its window and ends. Under pacing the path windows rarely bind: without
// this, round robin gives a slow route's paths as much as the others. Unpaced, the
// windows steer (one packet out there also slows loss recovery under bursty loss).
inline void endpoint::impl::route_limit(connection& c, detail::path_flight& f, uint16_t rx, uint16_t ce,
                                        uint32_t newly, uint32_t rtt) noexcept
{
    if (rx > 0 && 2u * ce > rx) {
        if (c.cc.rate_hint_mbps != 0 && rtt > c.min_rtt_ns && c.srtt_ns >= c.min_rtt_ns &&
            rtt - c.min_rtt_ns > detail::k_route_queue * (c.srtt_ns - c.min_rtt_ns)) {
            f.route_win = 256;
        }
    } else if (f.route_win != 0 && ce == 0) {
        f.route_win += uint32_t(uint64_t(newly) * 65536 / f.route_win); // + newly / window
        if ((f.route_win >> 8) >= f.win_room) {
            f.route_win = 0;
        }
    }
}

inline void endpoint::impl::heard_from_peer(connection& c, uint64_t now) noexcept
{
    c.last_rx = now;
}

} // namespace metaroce
