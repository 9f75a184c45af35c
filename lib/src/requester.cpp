// Requester: posting send work requests and building the data packets of
// messages and READ responses, new and retransmitted (spec 4 and 5.3). Also
// endpoint::poll_tx and produce, the send dispatch: most packets out are new data, and
// here produce_new is inlined into it.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "endpoint_impl.hpp"
#include "metaroce/seq.hpp"

namespace metaroce {

using namespace detail;

namespace {

constexpr uint64_t k_pace_burst = 4; // gaps a late sender may catch up (spec 6.5)

wire::opcode wire_op(wr_opcode op) noexcept
{
    switch (op) {
    case wr_opcode::write: return wire::opcode::write;
    case wr_opcode::write_imm: return wire::opcode::write_imm;
    case wr_opcode::send: return wire::opcode::send;
    case wr_opcode::send_imm: return wire::opcode::send_imm;
    case wr_opcode::read: return wire::opcode::read_req;
    }
    return wire::opcode::write;
}

} // namespace

post_result endpoint::impl::post_send(connection& c, const send_wr& wr, uint64_t now)
{
    if (c.state != conn_state::connecting && c.state != conn_state::established) {
        return post_result::conn_not_usable;
    }
    if (wr.stream >= c.streams_n) {
        return post_result::bad_stream;
    }
    const bool is_read = wr.op == wr_opcode::read;
    const uint32_t need = is_read ? access::local_write : 0;
    // Each packet looks its bytes up again when it is built; this check refuses a
    // request that could never be sent.
    sge whole = wr.local;
    const bool listed = wr.num_sge > 1;
    if (wr.num_sge == 1 && wr.sg_list != nullptr) {
        whole = wr.sg_list[0];
    }
    if (listed) {
        uint64_t total = 0;
        if (const post_result pr = check_list(wr.sg_list, wr.num_sge, need, total); pr != post_result::ok) {
            return pr;
        }
        whole = sge{0, uint32_t(total), 0};
    } else {
        if (whole.length > k_max_msg_len) {
            return post_result::too_long;
        }
        uint8_t* host = nullptr;
        if (const mr_check mc = mrs.check_local(whole.lkey, whole.addr, whole.length, need, &host);
            mc != mr_check::ok) {
            return to_post_result(mc);
        }
    }
    const uint32_t si = c.next_msn % c.sq.size();
    if (c.sq[si].in_use) {
        return post_result::queue_full;
    }
    if (!claim_stream(c, wr.stream)) {
        return post_result::queue_full; // every stream record of the endpoint is in use
    }
    if (!claim_slot(send_slots, c.sq, si)) {
        return post_result::queue_full; // every slot chunk of the endpoint is in use
    }
    int32_t list = detail::sge_pool::k_none;
    if (listed) {
        list = sges.store({wr.sg_list, wr.num_sge});
        if (list == detail::sge_pool::k_none) {
            release_slot(send_slots, c.sq, si);
            return post_result::queue_full;
        }
    }
    send_slot& s = c.sq[si]; // after the claim: before it the index named the sentinel
    stream_state& ss = c.stream(wr.stream);
    s = send_slot{};
    s.in_use = true;
    s.op = wire_op(wr.op);
    s.msn = c.next_msn++;
    s.ssn = ss.next_ssn++;
    s.recv_seq = wire::info(s.op).consumes_recv ? ss.next_recv_seq++ : 0;
    s.wr = wr;
    s.wr.local = whole;
    s.wr.sg_list = nullptr; // the application's array is not ours to keep
    s.wr.num_sge = 0;
    s.sgl = list;
    s.pkts_total = is_read ? 1 : packets_in(whole.length, c.mtu);
    const int32_t idx = int32_t(s.msn % c.sq.size());
    if (ss.tail == k_nil) {
        ss.head = idx;
    } else {
        c.sq[ss.tail].next_in_stream = idx;
    }
    ss.tail = idx;
    ++c.outstanding;
    if (is_read) {
        ++c.reads_outstanding;
        rates.expect(slot_of(c.id), now); // its responses come here (spec 6.4)
    }
    if (c.state == conn_state::established) {
        mark_ready(c);
    }
    return post_result::ok;
}

// Round robin over paths with window (spec 5.3, 5.8). Suspect paths, and paths at the
// limit their own full route set (route_limit), are used only when no other path has
// room, and paths on a plane whose port the driver says is backed up only when no path
// on another plane has; failed paths never carry data. Congested paths are not skipped:
// their trimmed windows already steer packets elsewhere (skipping them costs goodput).
// Returns -1 when nothing may be sent now.
// The common case inline: the next path in turn is good and has room (exactly what
// the scan's first step would take); anything else goes to the scan.
namespace {
// What route_limit lets the path hold: its earned packets, or no limit.
inline uint32_t route_room(const path_flight& f) noexcept
{
    const uint32_t limit = f.route_win >> 8;
    return limit != 0 ? limit : UINT32_MAX;
}
} // namespace

__attribute__((always_inline)) inline int endpoint::impl::pick_path(connection& c, uint64_t now) noexcept
{
    if (c.inflight < c.win_room && (c.cc.rate_hint_mbps == 0 || now >= c.pace_next) && c.tlp_paths.empty() &&
        c.paths != 0) {
        const uint32_t i = c.rr_path < c.paths ? c.rr_path : c.rr_path % c.paths;
        const path_tx& p = c.ptx[i];
        const path_flight& f = c.fl(p);
        if (p.state == path_state::good && f.inflight < f.win_room && f.inflight < route_room(f) &&
            uint32_t(p.next_psn - p.una) < k_path_window && has_record_room(c, p) &&
            (busy_planes >> p.plane & 1u) == 0) {
            c.rr_path = i + 1;
            return int(i);
        }
    }
    return pick_path_scan(c, now);
}

__attribute__((noinline)) int endpoint::impl::pick_path_scan(connection& c, uint64_t now) noexcept
{
    if (c.inflight >= c.win_room) {
        return -1;
    }
    if (c.cc.rate_hint_mbps != 0 && now < c.pace_next) {
        c.pace_wait = true; // spec 6.5: the hint also paces; the timer wakes us
        refresh_deadlines(c);
        return -1;
    }
    while (!c.tlp_paths.empty()) {
        // A tail probe waits for this packet (spec 5.6): it goes on the quiet path.
        const uint32_t i = c.tlp_paths.front();
        c.tlp_paths.pop(c.tlp_link());
        path_tx& p = c.ptx[i];
        p.tlp_new = false;
        if (p.state != path_state::failed && c.fl(p).inflight < c.fl(p).win_room &&
            uint32_t(p.next_psn - p.una) < k_path_window && has_record_room(c, p)) {
            p.ack_req_next = true;
            return int(i);
        }
        tail_probe(c, i, now, false); // no room there (window or records): resend the tail instead
        park(c, p);
    }
    int fallback = -1;
    int crowded = -1; // first path with room whose plane's port is backed up
    bool starved = false;
    for (uint32_t n = 0; n < c.paths; ++n) {
        const uint32_t i = (c.rr_path + n) % c.paths;
        path_tx& p = c.ptx[i];
        if (p.state == path_state::congested && now >= c.fl(p).congested_until) {
            p.state = path_state::good;
        }
        if (p.state == path_state::failed || c.fl(p).inflight >= c.fl(p).win_room ||
            uint32_t(p.next_psn - p.una) >= k_path_window) {
            continue;
        }
        if (!has_record_room(c, p)) {
            starved = true; // the record pool is empty: like a full window
            continue;
        }
        if (p.state == path_state::suspect || c.fl(p).inflight >= route_room(c.fl(p))) {
            if (fallback < 0) {
                fallback = int(i);
            }
            continue;
        }
        if ((busy_planes >> p.plane & 1u) != 0) {
            if (crowded < 0) {
                crowded = int(i);
            }
            continue;
        }
        c.rr_path = i + 1;
        return int(i);
    }
    if (crowded >= 0) {
        fallback = crowded; // every path with room is on a backed-up port: wait no longer
    }
    if (fallback >= 0) {
        c.rr_path = uint32_t(fallback) + 1;
    } else if (starved) {
        wait_for_records(c);
    }
    return fallback;
}

__attribute__((always_inline)) inline bool endpoint::impl::build_from_record(connection& c, uint32_t path, uint32_t psn, uint64_t now,
                                       tx_frame& f, bool retx, send_slot* known, bool copy,
                                       uint8_t route_plane, uint16_t route_sport) noexcept
{
    path_tx& p = c.ptx[path];
    pkt_record& r = retx ? c.rec(p, psn) : c.next_rec(p);
    const uint8_t plane = copy ? route_plane : p.plane;
    wire::bth_fields b = bth_for(c, wire::opcode::read_resp, uint8_t(path), plane, now);
    b.psn = psn;
    const uint8_t* src = nullptr;
    uint32_t msg_len = 0;
    // The request's slot, looked up once (a chunk directory walk) for the whole build.
    send_slot* const sp = r.kind != rec_kind::request ? nullptr : known != nullptr ? known : &c.sq[r.slot];
    const read_job* jp = nullptr;
    if (sp != nullptr) {
        const send_slot& s = *sp;
        if (!s.in_use || s.msn != r.msn) {
            return false;
        }
        b.op = s.op;
        msg_len = s.wr.local.length;
        // (Its message fields go into m only when its headers are built whole, below.)
        // The source is copied in after the headers (below), its range checked under its
        // lkey again whenever a region was deregistered since the last check (gather_msg),
        // retransmissions included: once its region is gone nothing more is read from it.
    } else {
        read_job& j = c.jobs[r.slot];
        if (!j.in_use || j.msn != r.msn || j.failed) {
            return false;
        }
        msg_len = j.len;
        jp = &j;
        uint8_t* from = nullptr;
        const mr_check mc = mrs.check_remote(j.rkey, j.va + r.offset, r.len, access::remote_read, &from);
        if (mc != mr_check::ok) {
            j.failed = true;
            fail_read_job(c, j, mc);
            return false;
        }
        src = from;
    }
    const bool last = b.op == wire::opcode::read_req || r.offset + r.len == msg_len;
    b.flags = (last ? wire::bth_flag::last : 0) | (retx ? wire::bth_flag::retx : 0);
    if (last && !retx && sp != nullptr && r.msn + 1 == c.next_msn && c.job_tx >= c.job_count) {
        // The newest posted request's last packet, no READ data left to send: nothing
        // more is queued, so the receiver can hand this sender's share on now (spec 6.4).
        b.flags |= wire::bth_flag::drained;
    }
    if (sp != nullptr && sp->wr.solicited && wire::info(b.op).consumes_recv) {
        b.flags |= wire::bth_flag::solicited;
    }
    // Ask for an ACK now when this packet fills the path's or the connection's window:
    // nothing more can go until one comes back, so a delayed ACK would idle the sender.
    // Also when the connection has fewer packets out than paths and this path none:
    // round robin puts at most one packet on each, so no later packet of the path can
    // share its ACK in time and a delayed ACK only delays (and RACK's wait, spec 5.5).
    const path_flight& fb = c.fl(p);
    const bool fills = fb.inflight + 1 >= fb.win_room || c.inflight + 1 >= c.win_room ||
                       (fb.inflight == 0 && c.inflight + 1 < c.paths);
    const bool probe = !copy && p.ack_req_next; // new data a tail probe asked for (pick_path)
    if (copy) {
        b.flags |= wire::bth_flag::ack_req; // the record keeps its original's ack_req (rack_delivered)
    } else {
        r.ack_req = last || fills || retx || probe;
        if (r.ack_req) {
            b.flags |= wire::bth_flag::ack_req;
        }
    }
    if (!copy) {
        p.ack_req_next = false;
    }
    size_t hdr = 0;
    tx_header_cache& th = tx_hdr;
    constexpr size_t k_th = sizeof(th.bytes);
    if (sp != nullptr && th.conn == c.id && th.msn == sp->msn && th.peer_conn == c.peer_conn &&
        f.buf.size() >= std::max(k_th, th.len + r.len)) {
        std::memcpy(f.buf.data(), th.bytes, k_th); // bytes past th.len are overwritten or unsent
        wire::patch_data_header(f.buf.data(), b, r.offset);
        hdr = th.len;
    } else {
        wire::msg_fields m; // only here: its zeroing is not free
        m.msg_len = msg_len;
        m.offset = r.offset;
        if (jp != nullptr) {
            m.stream = jp->stream;
            m.msn = jp->msn;
        } else {
            const send_slot& s = *sp;
            m.stream = s.wr.stream;
            m.msn = s.msn;
            m.ssn = s.ssn;
            m.recv_seq = s.recv_seq;
            m.va = s.wr.remote_va;
            m.rkey = s.wr.rkey;
            m.imm = s.wr.imm;
            if (s.op == wire::opcode::read_req) {
                m.read_hint_mbps = rates.read_hint_mbps(slot_of(c.id));
                c.read_share_mbps = m.read_hint_mbps; // for this READ_REQ's own timers
            }
        }
        hdr = wire::build_data_headers(f.buf, b, m, r.len);
        if (hdr == 0) {
            return false;
        }
        if (sp != nullptr && f.buf.size() >= k_th) {
            std::memcpy(th.bytes, f.buf.data(), k_th);
            th.conn = c.id;
            th.msn = sp->msn;
            th.peer_conn = c.peer_conn;
            th.len = hdr;
        }
    }
    // Zero copy when the driver asks: the payload stays in its region, described by
    // reference (it is read again from there for every retransmission).
    f.payload_refs = 0;
    f.payload_len = 0;
    if (sp != nullptr) {
        send_slot& s = *sp;
        bool by_ref = false;
        mr_check mc = mr_check::ok;
        // An orphan copy may be freed before a port has sent a frame pointing into it.
        if (s.op != wire::opcode::read_req && f.want_payload_ref && !s.orphaned && r.len > 0) {
            mc = gather_refs(s.wr.local, s.sgl, r.offset, r.len, f, by_ref);
        }
        if (s.op != wire::opcode::read_req && mc == mr_check::ok && !by_ref) {
            uint8_t* to = f.buf.data() + hdr;
            mc = s.sgl == detail::sge_pool::k_none ? gather_msg(s, r.offset, r.len, to)
                                                   : gather(s.wr.local, s.sgl, r.offset, r.len, to);
        }
        if (mc != mr_check::ok) {
            s.status = wc_status::loc_prot_err;
            s.done = true;
            c.local_fault = true;
            return false;
        }
    } else if (r.len > 0 && f.want_payload_ref) {
        f.payload[0] = {src, r.len};
        f.payload_refs = 1;
        f.payload_len = r.len;
    } else if (r.len > 0) {
        std::memcpy(f.buf.data() + hdr, src, r.len);
    }
    f.len = hdr + r.len - f.payload_len;
    fill_frame_route(c, plane, copy ? route_sport : p.udp_sport, f);
    // A READ response before its first ACK: the share its READ_REQ told sets the schedule
    // (the reader spaced the READ_REQs, spec 6.4), so the packet after the first waits its
    // gap, not just the first ACK's round trip.
    uint32_t pace_mbps = c.cc.rate_hint_mbps;
    if (pace_mbps == 0 && jp != nullptr && !c.cc.acked) [[unlikely]] {
        pace_mbps = c.early_hint_mbps;
    }
    if ((!retx || copy) && pace_mbps != 0) {
        // Space new packets at the receiver's share, in wire bytes (the driver's framing).
        // A sender woken late (a coarse poll loop or timer) keeps its schedule if it is
        // at most k_pace_burst gaps behind, so pacing keeps the share instead of one packet
        // per wake-up; one idle for longer starts afresh (no burst after idle).
        const uint64_t gap = (uint64_t(f.wire_len()) + cfg.frame_overhead_bytes) * 8000 / pace_mbps;
        const bool behind = c.pace_next != 0 && now > c.pace_next && now - c.pace_next <= k_pace_burst * gap;
        c.pace_next = (behind ? c.pace_next : std::max(c.pace_next, now)) + gap;
        if (c.pace_wait) {
            refresh_deadlines(c);
        }
    }
    ++stats.tx_data_packets;
    stats.tx_payload_bytes += r.len;
    if (copy) {
        // Not a transmission of the path's order (5.5): its ACK proves nothing sent
        // after the original lost; RACK keeps judging the original (its send time and
        // log entry) and the path's timers run as they were.
        return true;
    }
    r.sent_ts = uint32_t(now);
    r.xmit_no = ++p.xmit_counter;
    log_sent(c, sent_entry::make(psn, r.xmit_no, path));
    ++c.fl(p).tx_packets;
    const uint64_t queue = hint_queue_ns(c, cfg.frame_overhead_bytes);
    // The probe runs from a quiet path's first send, and a pending one from the latest
    // resend: its answer needs a round trip too. After the path's probe fired, a resend
    // or the probe's new packet arms one more, ahead of the RTO, while the path has sent
    // fewer than k_spell_probes and the connection's loss is chance (spec 5.6): a lost
    // probe is then probed in turn, and a timeout takes a resend and its probe both lost.
    // Otherwise a probe's resend arms none, and its new packet none ahead of the RTO: a
    // dead route times out as soon as ever.
    const bool quiet = c.fl(p).tlp_deadline == k_no_deadline;
    const bool again = quiet && (retx || probe) && c.fl(p).spell_probes > 0 &&
                       c.fl(p).spell_probes < k_spell_probes && loss_slack(c, path) > 0;
    if (quiet ? !retx || again : retx) {
        set_tlp(c, p, now + probe_timeout(c.fl(p), probe_rtt(c, cfg.transport.initial_rtt_ns),
                                          cfg.transport.ack_delay_ns, queue, cfg.transport.min_probe_ns));
        if ((retx || again) && c.fl(p).rto_deadline < c.fl(p).tlp_deadline) {
            set_rto(c, p, c.fl(p).tlp_deadline); // the probe comes first (it then pushes the RTO)
        }
    }
    if (c.fl(p).rto_deadline == k_no_deadline) {
        set_rto(c, p, now + c.fl(p).rto_ns + queue);
    }
    return true;
}

bool endpoint::impl::produce_retx(connection& c, uint64_t now, tx_frame& f) noexcept
{
    // A failed path keeps its queue until a probe is answered: rotate past it.
    for (size_t skips = c.retx_paths.size(); skips > 0 && c.ptx[c.retx_paths.front()].state == path_state::failed;
         --skips) {
        const uint32_t path = c.retx_paths.front();
        c.retx_paths.pop(c.retx_link());
        c.retx_paths.push(path, c.retx_link());
    }
    while (!c.retx_paths.empty()) {
        const uint32_t path = c.retx_paths.front();
        path_tx& p = c.ptx[path];
        if (p.state == path_state::failed) {
            return false; // only failed paths have something to resend
        }
        settle_also(c, path, now); // what a later ACK said arrived is not sent again
        // Lost records in PSN order from the lowest one queued. Each scan step moves
        // retx_from forward; only queue_retx moves it back (amortised O(1) per packet).
        uint32_t psn = seq_lt(c.fl(p).retx_from, p.una) ? p.una : c.fl(p).retx_from;
        for (; psn != p.next_psn; ++psn) {
            pkt_record& r = c.rec(p, psn);
            if (r.state != rec_state::lost) {
                continue;
            }
            if (!build_from_record(c, path, psn, now, f, true)) {
                continue;
            }
            r.state = rec_state::in_flight;
            ++r.retx;
            if (r.copied) {
                // Its copy was lost too (or is late): the resend is a new transmission
                // that may be copied in turn (spec 5.10), so a packet lost twice is not
                // left to a second loss detection at 1 in 10.
                r.copied = false;
                --c.copies;
            }
            ++c.fl(p).retransmits;
            ++stats.retransmits;
            // Leave the list once nothing more is lost, as an emptied queue did.
            for (c.fl(p).retx_from = psn + 1; c.fl(p).retx_from != p.next_psn; ++c.fl(p).retx_from) {
                if (c.rec(p, c.fl(p).retx_from).state == rec_state::lost) {
                    return true;
                }
            }
            c.retx_paths.pop(c.retx_link());
            p.in_retx_list = false;
            return true;
        }
        c.retx_paths.pop(c.retx_link());
        p.in_retx_list = false;
        park(c, p); // a repeated cumulative point settled everything it had lost
    }
    return false;
}

// Proactive copies (spec 5.10): with the connection's window open beyond what new data
// uses and its packets measurably lost, its oldest unacknowledged transmissions (first
// ones, and resends of packets whose copy was lost too) are sent once more, each at most
// once, into that room (each copy holds a packet of the window until its record is
// settled) and at the hint's pace. A copy keeps its record's path and PSN (the receiver
// drops whichever of the two arrives second as a duplicate) but takes the next path's
// route, normally on another plane, so a loss burst on one last hop does not take both.
// Transmissions are taken in send order from copy_at: each is looked at once.
bool endpoint::impl::produce_copy(connection& c, uint64_t now, tx_frame& f) noexcept
{
    if (c.inflight + c.copies >= c.win_room || c.cc.alpha >= k_copy_alpha ||
        (c.cc.rate_hint_mbps != 0 && now < c.pace_next)) {
        return false;
    }
    const send_log& log = c.sent_order;
    if (log.empty()) {
        return false;
    }
    uint32_t h = int32_t(c.copy_at - log.head) < 0 || int32_t(c.copy_at - log.tail) > 0 ? log.head : c.copy_at;
    uint16_t chunk = log.chunk_of(logs, h);
    const uint32_t first = h;
    for (; h != log.tail; ++h) {
        if (h % k_log_chunk == 0 && h != first) {
            chunk = logs.aux(chunk);
        }
        const sent_entry e = logs.base()[size_t(chunk) * k_log_chunk + h % k_log_chunk];
        const uint32_t i = e.path();
        path_tx& p = c.ptx[i];
        if (seq_lt(e.psn, p.una)) {
            continue; // acknowledged
        }
        pkt_record& r = c.rec(p, e.psn);
        // Sent again since (not this entry's transmission), settled, held, copied
        // already, sent k_copy_max_sends times, or on a failed path: not copied. Nor one
        // sent before the path's latest transmission: that one's ACK shows its loss by
        // the per-path rule (5.5), which orders by transmission, a round trip from now.
        // (A resend of an older PSN is the latest, though later PSNs went before it.)
        if (!e.names(r.xmit_no) || r.state != rec_state::in_flight || r.copied || r.retx + 1u >= k_copy_max_sends ||
            p.state == path_state::failed || r.xmit_no != p.xmit_counter) {
            continue;
        }
        const uint32_t qi = i + 1 < c.paths ? i + 1 : 0;
        const path_tx& q = c.ptx[qi];
        const bool other = q.state != path_state::failed && (busy_planes >> q.plane & 1u) == 0;
        if (!other && (busy_planes >> p.plane & 1u) != 0) {
            break; // both ports hold their share already: copies take only idle ports
        }
        if (!build_from_record(c, i, e.psn, now, f, true, nullptr, true, other ? q.plane : p.plane,
                               other ? q.udp_sport : p.udp_sport)) {
            continue;
        }
        r.copied = true;
        ++r.retx;
        ++c.copies;
        ++stats.proactive_copies;
        c.copy_at = h + 1;
        return true;
    }
    c.copy_at = h;
    return false;
}

// Puts the next PSN of `path` on the wire for (kind, slot, msn, offset, len).
__attribute__((always_inline)) inline bool endpoint::impl::send_new(connection& c, uint32_t path, rec_kind kind, uint16_t slot,
                              uint32_t msn, uint32_t offset, uint16_t len, uint64_t now,
                              tx_frame& f, send_slot* sp) noexcept
{
    path_tx& p = c.ptx[path];
    const uint32_t psn = p.next_psn;
    bool fresh = false;
    pkt_record& r = claim_next(c, p, fresh);
    r = pkt_record{};
    r.kind = kind;
    r.slot = slot;
    r.msn = msn;
    r.offset = offset;
    r.len = len;
    if (!build_from_record(c, path, psn, now, f, false, sp)) {
        if (fresh) {
            records.give(c.fl(p).tail); // a path holds no chunk before it sends into it
            path_flight& fb = c.fl(p);
            fb.dir[dir_slot(fb, p, psn)] = fb.tail = record_pool::k_nil;
        }
        park(c, p); // it was settled: it stays so

        return false;
    }
    r.state = rec_state::in_flight;
    if ((++p.next_psn & (k_chunk_records - 1)) == 0) {
        c.fl(p).tail = record_pool::k_nil; // the next PSN starts a chunk
    }
    ++c.fl(p).inflight;
    ++c.inflight;
    return true;
}

bool endpoint::impl::produce_read_resp(connection& c, uint64_t now, tx_frame& f) noexcept
{
    while (c.job_tx < c.job_count) {
        const uint32_t ji = (c.job_head + c.job_tx) % c.jobs.size();
        read_job& j = c.jobs[ji];
        if (j.fully_sent) {
            ++c.job_tx;
            continue;
        }
        const int path = pick_path(c, now);
        if (path < 0) {
            return false;
        }
        const auto len = uint16_t(std::min<uint32_t>(c.mtu, j.len - j.next_offset));
        if (!send_new(c, uint32_t(path), rec_kind::read_resp, uint16_t(ji), j.msn, j.next_offset, len,
                      now, f)) {
            return false;
        }
        j.next_offset += len;
        if (j.next_offset >= j.len) {
            j.fully_sent = true;
            ++c.job_tx;
        }
        return true;
    }
    return false;
}

// A reader's READ_REQs leave one first response apart, at its share of inbound capacity
// (spec 6.4): each responder's first packet then lands in a slot of its own on the
// reader's last hop, instead of every responder's arriving at once, and the responders'
// pacing, which starts from their first packet, keeps those slots. The slots take the
// planes in turn (a READ_REQ goes on its slot's plane, and its responder starts there),
// so each plane's last hop gets every P-th slot. Each READ_REQ reserves its slot when it
// reaches the head of its connection; false while it is not yet due (the pacing wake-up
// brings the connection back then).
__attribute__((noinline)) bool endpoint::impl::read_req_due(connection& c, const send_slot& s, uint64_t now) noexcept
{
    if (c.read_req_at == k_no_deadline) {
        const uint64_t first_bytes = std::min<uint64_t>(c.mtu, s.wr.local.length) +
                                     wire::data_header_len(wire::opcode::read_resp) + cfg.frame_overhead_bytes;
        c.read_req_at = std::max(read_req_next, now);
        c.read_req_plane = uint8_t(read_req_slots++ % std::max<uint32_t>(c.planes, 1));
        read_req_next = c.read_req_at + uint64_t(double(first_bytes) * 8000 / std::max(1.0, rates.pool_mbps()));
    }
    if (now >= c.read_req_at) {
        rates.expect(slot_of(c.id), now); // the share set aside waits from here, not from the post
        start_on_plane(c, c.read_req_plane); // the responder answers on it (spec 6.4)
        return true;
    }
    c.pace_next = std::max(c.pace_next, c.read_req_at);
    c.pace_wait = true;
    refresh_deadlines(c);
    return false;
}

__attribute__((always_inline)) inline bool endpoint::impl::produce_new(connection& c, uint64_t now, tx_frame& f) noexcept
{
    while (c.tx_msn != c.next_msn) {
        const uint32_t si = c.tx_slot;
        send_slot& s = c.sq[si];
        if (!s.in_use || s.msn != c.tx_msn || s.done || s.fully_sent) {
            advance_tx(c); // flushed or already sent
            continue;
        }
        if (!c.tx_admitted) {
            // The peer tracks at most max_msgs messages: wait until msn - max_msgs completed.
            const uint32_t older = c.tx_msn - c.max_msgs;
            const send_slot& o = c.sq[older % c.sq.size()];
            if (o.in_use && o.msn == older) {
                return false;
            }
            c.tx_admitted = true;
        }
        if (s.op == wire::opcode::read_req && rates.enabled() && !read_req_due(c, s, now)) [[unlikely]] {
            return false;
        }
        const int path = pick_path(c, now);
        if (path < 0) {
            return false;
        }
        const auto len = s.op == wire::opcode::read_req
                             ? uint16_t(0)
                             : uint16_t(std::min<uint32_t>(c.mtu, s.wr.local.length - s.next_offset));
        if (!send_new(c, uint32_t(path), rec_kind::request, uint16_t(si), s.msn, s.next_offset, len,
                      now, f, &s)) {
            return false;
        }
        s.next_offset += len;
        if (s.op == wire::opcode::read_req || s.next_offset >= s.wr.local.length) {
            s.fully_sent = true;
            c.read_req_at = k_no_deadline; // (a READ_REQ's slot is used)
            advance_tx(c);
        }
        return true;
    }
    return false;
}

// Priority within a connection: control, NAK, ACK, retransmission, READ response, new data.
// Each producer is called only when its queue holds something (the same tests they
// start with): this runs for every packet sent.
__attribute__((always_inline)) inline bool endpoint::impl::produce(connection& c, uint64_t now, tx_frame& f) noexcept
{
    if ((c.hello_pending || c.close_pending) && produce_ctrl(c, now, f)) {
        return true;
    }
    if (c.state == conn_state::connecting || c.state == conn_state::closed) {
        return false;
    }
    if (!f.data_first && ((!c.naks.empty() && produce_nak(c, now, f)) || (!c.ack_queue.empty() && produce_ack(c, now, f)))) {
        return true; // its ACKs wait in ack_ready when the driver asked for data first
    }
    if (c.state != conn_state::established) {
        return false;
    }
    if ((c.probes_pending != 0 || c.plane_probes != 0) && produce_probe(c, now, f)) {
        return true;
    }
    // Copies only into room new data leaves (application limited) and only under loss:
    // loss-free, loss_q is 0 and this is one compare.
    return (!c.retx_paths.empty() && produce_retx(c, now, f)) ||
           (c.job_tx < c.job_count && produce_read_resp(c, now, f)) ||
           (c.tx_msn != c.next_msn && produce_new(c, now, f)) ||
           (c.loss_q >= k_copy_loss && c.tx_msn == c.next_msn && c.job_tx == c.job_count &&
            produce_copy(c, now, f));
}

// tx_frame::is_data reads the opcode without the wire headers.
static_assert(offsetof(wire::bth, op) == 1 && uint8_t(wire::opcode::ack) == tx_frame::k_first_ctrl_opcode &&
              wire::opcode::read_resp < wire::opcode::ack);

// Every packet out. Here, with produce and produce_new, so sending new data (most
// packets) is one function.
bool endpoint::poll_tx(uint64_t now, tx_frame& f)
{
    impl& e = *impl_;
    e.clock = now;
    e.busy_planes = f.busy_planes;
    f.len = 0;
    f.payload_refs = 0;
    f.payload_len = 0;
    if (!e.replies.empty() && e.produce_reply(now, f)) {
        ++e.stats.tx_packets;
        e.stats.tx_bytes += f.len;
        return true;
    }
    // ACKs and NAKs before anyone's data (spec 5.4), but at most k_ack_burst in a row
    // while data waits: a peer that makes us ACK every packet must not silence our data.
    // (The queue is looked at here first: most calls, a sender's, find it empty.)
    if (!f.data_first && e.acks_in_row < impl::k_ack_burst && !e.ack_ready.empty() && e.produce_ack_first(now, f)) {
        ++e.acks_in_row;
        return true;
    }
    e.acks_in_row = 0;
    while (!e.ready.empty()) {
        const uint32_t idx = e.ready.front();
        e.ready.pop();
        connection* c = e.conns[idx].get();
        if (c == nullptr) {
            continue;
        }
        c->in_ready = false;
        const bool sent = e.produce(*c, now, f);
        if (c->local_fault) {
            // A local buffer of a request failed its check as it was being sent (its
            // region was deregistered): as in verbs, the connection goes to ERROR.
            c->local_fault = false;
            e.enter_error(*c, wc_status::wr_flush_err);
            e.mark_ready(*c); // its NAK, if any, still goes out
        }
        e.recompute_timer(*c, now); // sending arms RTOs; being paced arms the pacing wake-up
        if (sent) {
            e.mark_ready(*c); // round robin: come back for more after the others
            ++e.stats.tx_packets;
            e.stats.tx_bytes += f.wire_len();
            return true;
        }
    }
    if (!e.ack_ready.empty() && e.produce_ack_first(now, f)) { // no data to send: the ACKs are not held back
        ++e.acks_in_row;
        return true;
    }
    return false;
}

} // namespace metaroce
