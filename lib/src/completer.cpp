// Completer: ACKs and NAKs coming back. SACK processing, loss detection by
// per-path ordering, RTT and RTO, congestion control, and send completions in
// stream order (spec 5.3, 5.5, 5.6, 6).
#include <algorithm>
#include <cstring>

#include "endpoint_impl.hpp"
#include "metaroce/seq.hpp"

namespace metaroce {

using namespace detail;

namespace {

bool outstanding(rec_state s) noexcept
{
    return s == rec_state::in_flight || s == rec_state::lost || s == rec_state::rnr_hold;
}

wc_opcode wc_op(wire::opcode op) noexcept
{
    switch (op) {
    case wire::opcode::write:
    case wire::opcode::write_imm: return wc_opcode::write;
    case wire::opcode::read_req: return wc_opcode::read;
    default: return wc_opcode::send;
    }
}

} // namespace

// A READ response packet at the requester (spec 8.3): checked against the READ it
// answers, placed at its offset in the local buffer (looked up by lkey each time, so a
// deregistered buffer is never written) and counted by offset, not by bytes.
// Returns false for a packet that answers nothing outstanding (dropped, acknowledged).
bool endpoint::impl::land_read_resp(connection& c, const wire::packet_view& p) noexcept
{
    send_slot& s = c.sq[p.msn % c.sq.size()];
    if (!s.in_use || s.msn != p.msn || s.op != wire::opcode::read_req || s.done || s.resp_complete ||
        p.msg_len != s.wr.local.length) {
        return false;
    }
    if (!packet_shape_ok(p.msg_len, c.mtu, p.offset, p.payload.size())) {
        ++stats.rx_bad_shape;
        return false;
    }
    const auto len = uint32_t(p.payload.size());
    if (scatter(s.wr.local, s.sgl, p.offset, p.payload) != mr_check::ok) {
        s.status = wc_status::loc_prot_err;
        s.done = true;
        enter_error(c, wc_status::wr_flush_err);
        return false;
    }
    stats.rx_payload_bytes += len;
    bool corrupt = false;
    if (cover(s.resp, coverage_key, p.offset, p.msg_len, c.mtu, corrupt)) {
        s.resp_complete = true;
        on_read_resp_landed(c, s);
    } else if (corrupt) {
        ++stats.rx_bad_shape; // as many packets as the READ has, but not every offset
        s.status = wc_status::rem_inv_req_err;
        s.done = true;
        enter_error(c, wc_status::wr_flush_err);
    }
    return true;
}

void endpoint::impl::on_read_resp_landed(connection& c, send_slot& s) noexcept
{
    if (s.pkts_acked == s.pkts_total && !s.done) {
        s.done = true;
        try_complete(c, s.wr.stream);
    }
}

// n packets of one message (kind, slot, msn) were acknowledged: an in-order run is
// credited once, not once per packet.
void endpoint::impl::credit(connection& c, rec_kind kind, uint16_t slot, uint32_t msn, uint32_t n) noexcept
{
    if (kind == rec_kind::request) {
        send_slot& s = c.sq[slot];
        if (!s.in_use || s.msn != msn || s.done) {
            return;
        }
        // Each packet is credited once (only outstanding records are), so the count
        // reaches pkts_total exactly when the message's last packet is in the run.
        if ((s.pkts_acked += n) == s.pkts_total && (s.op != wire::opcode::read_req || s.resp_complete)) {
            s.done = true;
            try_complete(c, s.wr.stream);
        }
        return;
    }
    read_job& j = c.jobs[slot];
    if (!j.in_use || j.msn != msn || j.done) {
        return;
    }
    if ((j.pkts_acked += n) == j.pkts_total) {
        j.done = true;
        on_job_done(c);
    }
}

// Reports finished requests of a stream in posting order; a completion therefore
// implies every earlier message of the stream has landed.
void endpoint::impl::try_complete(connection& c, uint16_t stream) noexcept
{
    stream_state& ss = c.stream(stream);
    while (ss.head != k_nil) {
        send_slot& s = c.sq[ss.head];
        if (!s.done) {
            return;
        }
        if (s.wr.signaled || s.status != wc_status::success) {
            completion wc;
            wc.wr_id = s.wr.wr_id;
            wc.conn = c.id;
            wc.stream = stream;
            wc.status = s.status;
            wc.op = wc_op(s.op);
            wc.byte_len = s.wr.local.length;
            if (!push_cq(c, wc)) {
                return;
            }
        }
        ss.head = s.next_in_stream;
        if (ss.head == k_nil) {
            ss.tail = k_nil;
        }
        if (s.op == wire::opcode::read_req && --c.reads_outstanding == 0) {
            c.read_share_mbps = 0; // no response owed: our ACKs no longer queue behind any
        }
        sges.release(s.sgl);
        s.sgl = detail::sge_pool::k_none;
        s.in_use = false;
        release_slot(send_slots, c.sq, uint32_t(s.msn % c.sq.size()));
        --c.outstanding;
        ++c.tx_msgs_completed;
    }
}

// Admission under a share (spec 6.1): the connection takes the share's window whole on
// its first ACK; its paths start from their part of it (at least their initial window)
// instead of growing to it one round trip at a time, which at a long RTT costs round
// trips of milliseconds (scale-across).
void endpoint::impl::admit_paths(connection& c) noexcept
{
    const double share = std::min(cfg.transport.cc.path_cwnd_max, effective_cwnd(c.cc) / double(c.paths));
    const uint16_t q = pack_cwnd(share);
    for (path_tx& p : c.ptx) {
        if (p.blk == flights.sentinel()) {
            p.cwnd_q = std::max(p.cwnd_q, q); // its next block starts from it
        } else if (path_flight& f = c.fl(p); f.cc.cwnd < share) {
            f.cc.cwnd = share;
            f.win_room = window_room(share);
        }
    }
}

void endpoint::impl::on_ack(connection& c, const wire::packet_view& pk, uint64_t now) noexcept
{
    if (c.state != conn_state::established) {
        return;
    }
    ++stats.rx_acks;
    path_tx& p = c.ptx[pk.path];
    const uint32_t cum = pk.psn;
    if (seq_lt(cum, p.una) || seq_gt(cum, p.next_psn)) {
        ++stats.rx_stale_ack;
        return;
    }
    const wire::ack_header& a = *pk.ack;
    const uint32_t echo = a.ts_echo.host();
    uint32_t newly = 0;
    auto settle = [&](pkt_record& r) {
        if (outstanding(r.state)) {
            --c.fl(p).inflight;
            --c.inflight;
            ++newly;
            rack_delivered(c, r, echo, now);
            credit(c, r.kind, r.slot, r.msn, 1);
        }
    };
    // The cumulative run: its records are credited per message, and of its first
    // transmissions only the last one sent (the newest: a path sends its PSNs in order)
    // can move RACK's clock, so only it is handed to rack_delivered (resends each are).
    run_credit run;
    const pkt_record* newest_fresh = nullptr;
    for_records(c, p, p.una, cum, [&](uint32_t, pkt_record& r) {
        if (outstanding(r.state)) {
            ++newly;
            if (r.retx > 0) {
                rack_delivered(c, r, echo, now);
            } else {
                newest_fresh = &r;
            }
            run.add(*this, c, r);
        }
        r.state = rec_state::free;
    });
    c.fl(p).inflight -= newly;
    c.inflight -= newly;
    if (newest_fresh != nullptr) {
        rack_delivered(c, *newest_fresh, echo, now);
    }
    run.flush(*this, c);
    advance_una(c, p, cum);
    const uint32_t span = p.next_psn - cum;
    uint32_t highest = c.fl(p).highest_sacked_xmit;
    for (uint32_t i = 1; i < span && i < wire::k_sack_bits; ++i) {
        if (a.sack[i / 8] == 0) {
            i |= 7; // nothing in this byte (the usual case: no holes, an all-zero bitmap)
            continue;
        }
        if (((a.sack[i / 8] >> (i % 8)) & 1u) == 0) {
            continue;
        }
        pkt_record& r = c.rec(p, cum + i);
        if (outstanding(r.state)) {
            highest = seq_gt(r.xmit_no, highest) ? r.xmit_no : highest;
            settle(r);
            r.state = rec_state::sacked;
        }
    }
    // A path delivers in order, so anything sent before a packet that arrived is lost.
    if (seq_gt(highest, c.fl(p).highest_sacked_xmit)) {
        c.fl(p).highest_sacked_xmit = highest;
        for_records(c, p, cum, p.next_psn, [&](uint32_t psn, pkt_record& r) {
            if (r.state == rec_state::in_flight && seq_lt(r.xmit_no, highest)) {
                queue_retx(c, pk.path, psn);
            }
        });
    }
    // RTT from the echoed timestamp (RFC 6298 smoothing).
    const uint32_t sample = uint32_t(now) - a.ts_echo.host();
    const bool sampled = newly > 0 && sample < (1u << 31);
    if (sampled) {
        path_flight& f = c.fl(p);
        f.min_rtt_ns = f.min_rtt_ns == 0 ? sample : std::min<uint64_t>(f.min_rtt_ns, sample);
        c.min_rtt_ns = c.min_rtt_ns == 0 ? sample : std::min<uint64_t>(c.min_rtt_ns, sample);
        c.srtt_ns = c.srtt_ns == 0 ? sample : (7 * c.srtt_ns + sample) / 8;
        smooth_rtt(f.srtt_ns, f.rttvar_ns, sample);
        plane_rtt& l = c.lane(p);
        smooth_rtt(l.srtt_ns, l.rttvar_ns, sample);
        f.rto_ns = sampled_rto(f);
    }
    if (newly > 0 && cfg.transport.rack) {
        rack_detect(c, now);
    }
    if (c.inflight == 0) {
        c.sent_order.pop_to(logs, c.sent_order.tail); // every entry is settled: the chunks go back
        c.copies = 0;
    }
    if (c.loss_q != 0) {
        // The smoothed loss decays by 1/128 per packet acknowledged (spec 5.10).
        loss_share_down(c.loss_q, newly);
    }
    const uint16_t rx = a.rx_pkts.host();
    // A peer cannot mark more packets than it received (that would pin alpha and the
    // window at their minimum).
    const uint16_t ce = std::min(a.ce_pkts.host(), rx);
    if (newly > 0 && p.blk != flights.sentinel()) { // a repeat (spec 3.6) or a settled path's ACK counts nowhere
        c.fl(p).acked_rx += rx;
        c.fl(p).acked_ce += ce;
    }
    uint32_t hint = a.rate_hint_mbps.host();
    if (hint != 0 && hint < cfg.transport.cc.min_rate_hint_mbps) {
        hint = cfg.transport.cc.min_rate_hint_mbps; // spec 6.5: a floor
        ++stats.rx_hint_floored;
    }
    if (hint > c.cc.rate_hint_mbps && c.cc.rate_hint_mbps != 0 && c.pace_next > now) {
        // A larger share applies now, not after the gap the old one set (spec 6.5): the
        // wait left shrinks by the ratio of the shares. Scaled, not restarted: a push
        // reaches every sender at once, and restarting all their gaps then would line
        // their packets up into one burst per gap at the receiver.
        c.pace_next = now + (c.pace_next - now) * c.cc.rate_hint_mbps / hint;
        refresh_deadlines(c);
    }
    if (newly == 0) {
        cc.on_hint(c.cc, hint, c.min_rtt_ns, c.mtu); // a pushed share (spec 6.4)
        refresh_windows(c);
    }
    if (newly > 0) {
        path_progress(c, p, now);
        // Mostly marked: shown as congested for a round trip (spec 5.8); its window,
        // trimmed by the controller, is what steers new packets to the other paths.
        if (rx > 0 && 2u * ce > rx) {
            p.state = path_state::congested;
            c.fl(p).congested_until = now + (c.fl(p).srtt_ns != 0 ? c.fl(p).srtt_ns : cfg.transport.initial_rtt_ns);
        }
        ack_sample s;
        s.now_ns = now;
        s.newly_acked = newly;
        s.rx_pkts = rx;
        s.ce_pkts = ce;
        s.rtt_ns = sampled ? sample : 0;
        s.path_min_rtt_ns = c.fl(p).min_rtt_ns;
        s.srtt_ns = c.fl(p).srtt_ns != 0 ? c.fl(p).srtt_ns : cfg.transport.initial_rtt_ns;
        s.rate_hint_mbps = hint;
        s.min_rtt_ns = c.min_rtt_ns;
        s.packet_bytes = c.mtu;
        // The windows change only at a round's end or in slow start: their integer
        // forms are redone then, not on every ACK.
        path_flight& fb = c.fl(p);
        const double path_w = fb.cc.cwnd;
        const double conn_w = c.cc.cwnd;
        const double hint_w = c.cc.hint_cwnd;
        const bool admitted = c.cc.acked;
        cc.on_ack(fb.cc, c.cc, s);
        if (!admitted && c.cc.hint_cwnd > 0) {
            admit_paths(c); // spec 6.1: the share's window is spread over the paths at once
            // The first window waited for this ACK, not for a late wake-up: the schedule
            // the early share set (a READ response's, 6.5) does not catch up a burst.
            if (c.pace_next != 0) {
                c.pace_next = std::max(c.pace_next, now);
            }
        }
        if (fb.cc.cwnd != path_w) {
            fb.win_room = window_room(fb.cc.cwnd);
        }
        if (c.cc.cwnd != conn_w || c.cc.hint_cwnd != hint_w) {
            refresh_windows(c);
        }
        route_limit(c, fb, rx, ce, newly, sampled ? sample : 0);
        rearm_path_timers(c, p, now);
    }
    if ((pk.flags & wire::bth_flag::also_acks) != 0) {
        on_also_cum(c, pk.path, a.also_cum.host());
    }
    // A settled path's block goes back when the connection has no new data for it; while
    // it has, the path keeps it for its next packet (a busy connection's paths settle and
    // send again every few packets), unless the pool runs low. Once the connection has
    // nothing out and nothing to send, every settled path's goes.
    if (!new_data_ready(c)) {
        park(c, p); // first: a ping-pong's ACK then leaves park_all nothing to walk
        if (c.inflight == 0) {
            park_all(c);
        }
    } else if (flights.free_chunks() < flights.capacity() / 4) {
        park(c, p);
    }
    mark_ready(c);
}

// After progress on a path: its RTO and tail probe run from now while packets remain out.
void endpoint::impl::rearm_path_timers(connection& c, path_tx& p, uint64_t now) noexcept
{
    const bool out = c.fl(p).inflight > 0;
    const uint64_t queue = hint_queue_ns(c, cfg.frame_overhead_bytes);
    set_rto(c, p, out ? now + c.fl(p).rto_ns + queue : k_no_deadline);
    set_tlp(c, p, out ? now + probe_timeout(c.fl(p), probe_rtt(c, cfg.transport.initial_rtt_ns), cfg.transport.ack_delay_ns,
                                            queue, cfg.transport.min_probe_ns)
                      : k_no_deadline);
}

// Another path's cumulative point, repeated from the ACK before this one (spec 3.6). Kept,
// not applied: that path's own ACK, if it arrives, brings the RTT sample, the ECN counts
// and the window growth. The point only spares a resend once the path's timers fire or a
// loss is about to be resent (settle_also).
void endpoint::impl::on_also_cum(connection& c, uint8_t own_path, uint32_t also_cum) noexcept
{
    const uint32_t qi = also_cum >> 24;
    if (qi >= c.ptx.size() || qi == own_path) {
        return;
    }
    path_tx& q = c.ptx[qi];
    const uint32_t to = q.una + ((also_cum - q.una) & wire::k_also_psn_mask);
    if (seq_gt(to, q.una) && !seq_gt(to, q.next_psn) && seq_gt(to, c.fl(q).also_cum)) {
        c.fl(q).also_cum = to;
    }
}

// What a repeated cumulative point covers arrived: settled as an ACK would, without an
// RTT sample or window growth. True if it settled anything.
bool endpoint::impl::settle_also(connection& c, uint32_t qi, uint64_t now) noexcept
{
    path_tx& q = c.ptx[qi];
    const uint32_t to = c.fl(q).also_cum;
    if (!seq_gt(to, q.una) || seq_gt(to, q.next_psn)) {
        return false;
    }
    uint32_t newly = 0;
    run_credit run;
    for_records(c, q, q.una, to, [&](uint32_t, pkt_record& r) {
        if (outstanding(r.state)) {
            c.copies -= r.copied;
            ++newly;
            run.add(*this, c, r); // not RACK's clock: when it arrived is unknown, only that it did
        }
        r.state = rec_state::free;
    });
    c.fl(q).inflight -= newly;
    c.inflight -= newly;
    run.flush(*this, c);
    advance_una(c, q, to);
    if (newly == 0) {
        return false;
    }
    stats.rx_also_acked += newly;
    path_progress(c, q, now);
    rearm_path_timers(c, q, now);
    mark_ready(c);
    return true;
}

void endpoint::impl::on_nak(connection& c, const wire::packet_view& pk, uint64_t now) noexcept
{
    if (c.state != conn_state::established) {
        return;
    }
    ++stats.rx_naks;
    const wire::nak_header& n = *pk.nak;
    send_slot& rd = c.sq[n.msn.host() % c.sq.size()];
    if (n.reason != wire::nak_reason::rnr && rd.in_use && rd.msn == n.msn.host() &&
        rd.op == wire::opcode::read_req && !rd.done && rd.pkts_acked == rd.pkts_total) {
        // spec 8.5: the responder acknowledged this READ but can no longer serve it.
        rd.status = n.reason == wire::nak_reason::invalid_request ? wc_status::rem_inv_req_err
                                                                   : wc_status::rem_access_err;
        rd.done = true;
        enter_error(c, wc_status::wr_flush_err);
        return;
    }
    path_tx& p = c.ptx[pk.path];
    const uint32_t psn = pk.psn;
    if (seq_lt(psn, p.una) || !seq_lt(psn, p.next_psn)) {
        ++stats.rx_stale_ack;
        return;
    }
    pkt_record& r = c.rec(p, psn);
    if (!outstanding(r.state) || r.msn != n.msn.host()) {
        ++stats.rx_stale_ack;
        return;
    }
    if (r.kind != rec_kind::request) {
        // Our READ response was refused: the requester failed; so do we.
        if (n.reason != wire::nak_reason::rnr) {
            enter_error(c, wc_status::wr_flush_err);
        }
        return;
    }
    send_slot& s = c.sq[r.slot];
    if (n.reason == wire::nak_reason::rnr) {
        // The receive is not posted yet: hold this packet and try again later.
        const transport_config& t = cfg.transport;
        if (t.rnr_retries != 7 && ++s.rnr_count > t.rnr_retries) {
            // Blame the oldest unfinished request of the stream: in verbs order it is the
            // one the receiver was not ready for; the later ones are flushed behind it.
            const int32_t head = c.stream(s.wr.stream).head;
            send_slot& oldest = head != k_nil && !c.sq[head].done ? c.sq[head] : s;
            oldest.status = wc_status::rnr_retry_exc_err;
            oldest.done = true;
            enter_error(c, wc_status::wr_flush_err);
            return;
        }
        r.state = rec_state::rnr_hold;
        c.rnr_deadline = std::min(c.rnr_deadline, now + t.rnr_delay_ns);
        refresh_deadlines(c);
        // The NAK came back over this path, so its route works: waiting for a
        // receive must not count towards the path's timeouts.
        path_progress(c, p, now);
        return;
    }
    switch (n.reason) {
    case wire::nak_reason::rkey_invalid:
    case wire::nak_reason::access_denied:
    case wire::nak_reason::out_of_bounds: s.status = wc_status::rem_access_err; break;
    case wire::nak_reason::remote_operation: s.status = wc_status::rem_op_err; break;
    default: s.status = wc_status::rem_inv_req_err; break;
    }
    s.done = true;
    enter_error(c, wc_status::wr_flush_err);
}

void endpoint::impl::rnr_timer(connection& c, uint64_t now) noexcept
{
    c.rnr_deadline = k_no_deadline;
    refresh_deadlines(c);
    for (uint32_t i = 0; i < c.ptx.size(); ++i) {
        path_tx& p = c.ptx[i];
        for (uint32_t psn = p.una; psn != p.next_psn; ++psn) {
            if (c.rec(p, psn).state == rec_state::rnr_hold) {
                queue_retx(c, i, psn);
            }
        }
    }
    mark_ready(c);
    (void)now;
}

namespace {
// A packet acknowledged after its earlier transmission was lost: the smoothed loss of
// spec 5.10 moves by its gain towards all.
void note_loss(connection& c) noexcept
{
    loss_share_up(c.loss_q);
}

// A transmission sent at `sent` was delivered `age` later: RACK's clock moves on if it is
// the newest-sent so far.
void rack_clock(connection& c, uint32_t sent, uint32_t age) noexcept
{
    if (!c.rack_valid || int32_t(sent - c.rack_sent) > 0) {
        c.rack_valid = true;
        c.rack_sent = sent;
        c.rack_rtt = age;
    }
}
} // namespace

// An ACK settled `r`, which was copied (spec 5.10): its copy leaves the window (the
// settle paths that do not come here, settle_also, count it themselves). True when `r`
// was never resent, only copied: it holds the original's send time then. The ACK of an
// original that asked for one at once echoes exactly that time; a later one names the
// copy, so the original was lost. That is loss evidence, and the copy counts as a resend
// for the loss slack (spec 5.6), so copies do not hide the loss it measures. RACK's clock
// takes the transmission the ACK names: it was delivered, and the echo is its send time.
__attribute__((noinline)) bool endpoint::impl::copy_delivered(connection& c, const pkt_record& r, uint32_t ts_echo,
                                                              uint64_t now) noexcept
{
    --c.copies;
    if (r.retx != 1) {
        return false; // resent since: judged as a resend
    }
    if (int32_t(ts_echo - r.sent_ts) <= 0) {
        rack_clock(c, r.sent_ts, uint32_t(now) - r.sent_ts);
        return true;
    }
    if (r.ack_req) {
        note_loss(c);
        ++c.copy_resends;
    }
    rack_clock(c, ts_echo, uint32_t(now) - ts_echo);
    return true;
}

// An ACK settled `r` (spec 5.5). A resend whose ACK names a packet sent before it (the
// echoed timestamp) was not needed: the original arrived, late, so the reorder window
// grows. Otherwise the newest-sent delivered packet moves RACK's clock on; an ACK that
// may be the original's for a resent packet gives no send time and is left out.
void endpoint::impl::rack_delivered(connection& c, const pkt_record& r, uint32_t ts_echo, uint64_t now) noexcept
{
    if (r.retx > 0) {
        resend_delivered(c, r, ts_echo, now);
        return;
    }
    rack_clock(c, r.sent_ts, uint32_t(now) - r.sent_ts);
}

// rack_delivered for a resent or copied record, out of the ACK's common path.
__attribute__((noinline)) void endpoint::impl::resend_delivered(connection& c, const pkt_record& r,
                                                                uint32_t ts_echo, uint64_t now) noexcept
{
    const uint32_t age = uint32_t(now) - r.sent_ts;
    if (r.copied && copy_delivered(c, r, ts_echo, now)) {
        return;
    }
    if (int32_t(ts_echo - r.sent_ts) < 0) {
        // Not needed. Late by reordering if the ACK names a packet sent a round trip and
        // a window before the resend (the original, left to arrive late); one sent
        // after the original says that packet's own ACK was lost: no reordering.
        ++stats.spurious_retx;
        if (uint64_t(r.sent_ts - ts_echo) < c.min_rtt_ns + c.reo_steps * std::max<uint64_t>(c.min_rtt_ns / 4, 1)) {
            return;
        }
        c.reo_steps = std::min(c.reo_steps + 1, cfg.transport.reorder_steps_max);
        c.reo_clean = 0;
        return;
    }
    // The latest (re)transmission delivered it: the one before was lost (or its ACK
    // was), evidence of loss for proactive copies (spec 5.10).
    note_loss(c);
    if (age >= c.min_rtt_ns) {
        rack_clock(c, r.sent_ts, age);
    }
}

// RACK (spec 5.5): a packet still on the wire that left before the newest-sent delivered
// packet, on any path, is lost once that packet's round trip and the reorder window have
// passed since it left. Walks the connection's send order from the oldest entry and
// stops at the first that cannot be judged yet, so each transmission is looked at about
// once: no scan of the paths per ACK.
void endpoint::impl::rack_detect(connection& c, uint64_t now) noexcept
{
    c.rack_deadline = k_no_deadline;
    if (!c.rack_valid) {
        return;
    }
    send_log& log = c.sent_order;
    uint64_t wait = 0;
    // True: the walk stops at this entry (it cannot be judged yet).
    auto judge = [&](const sent_entry& e, path_tx& p) {
        pkt_record& r = c.rec(p, e.psn);
        // Transmit numbers are unique on a path: a match is this very transmission.
        // Settled, resent since, or held: not this entry's business. Nor is a path that
        // lost k_rack_strikes packets in a row without delivering anything: random loss
        // rarely does that, a dead route always does, and its RTO judges the route.
        if (!e.names(r.xmit_no) || r.state != rec_state::in_flight || c.fl(p).rack_strikes >= k_rack_strikes) {
            return false;
        }
        if (int32_t(r.sent_ts - c.rack_sent) >= 0) {
            return true; // nothing delivered left after it; a later ACK looks again
        }
        if (wait == 0) {
            const uint64_t step = std::max<uint64_t>(c.min_rtt_ns / 4, 1);
            const uint64_t srtt = c.srtt_ns != 0 ? c.srtt_ns : step;
            wait = uint64_t(c.rack_rtt) + std::min<uint64_t>(c.reo_steps * step, srtt);
        }
        // Nor before its own path's RTT and four deviations: paths have queues of their
        // own (planes, spines), and a packet behind a deeper one is late, not lost. A path
        // with no RTT sample yet waits as its first timers do: first packets of many
        // senders queue together (spec 5.6), and under a hint a packet may wait one gap
        // behind the other senders' (spec 5.6). The ACK may also wait at the receiver
        // unless the packet asked for one at once.
        const uint64_t own = late_after(c.fl(p), c.lane(p), first_rtt(c, cfg.transport.initial_rtt_ns)) +
                             hint_queue_ns(c, cfg.frame_overhead_bytes);
        const uint64_t due = std::max(wait, own) + (r.ack_req ? 0 : cfg.transport.ack_delay_ns);
        const uint32_t age = uint32_t(now) - r.sent_ts;
        if (age < due) {
            set_rack(c, now + (due - age));
            return true;
        }
        const uint32_t path = e.path();
        queue_retx(c, path, e.psn);
        ++stats.rack_losses;
        // Random loss, not a dead route: the resend gets a full RTO to be answered.
        if (++c.fl(p).rack_strikes < k_rack_strikes && c.fl(p).rto_deadline != k_no_deadline &&
            c.fl(p).rto_deadline < now + c.fl(p).rto_ns) {
            set_rto(c, p, now + c.fl(p).rto_ns);
        }
        // The window shrinks back a step after every 16 losses without a spurious resend.
        if (++c.reo_clean >= 16) {
            c.reo_clean = 0;
            c.reo_steps = std::max(c.reo_steps - 1, 1u);
        }
        return false;
    };
    // A chunk at a time: most entries were acknowledged (their path's una passed them),
    // and each of those costs a load and a compare.
    path_tx* const paths = c.ptx.data();
    uint32_t h = log.head;
    uint16_t chunk = log.head_chunk;
    bool stop = false;
    while (h != log.tail && !stop) {
        if (h % k_log_chunk == 0 && h != log.head) {
            chunk = logs.aux(chunk); // the next chunk of the chain
        }
        const sent_entry* e = logs.base() + size_t(chunk) * k_log_chunk + h % k_log_chunk;
        const sent_entry* const end = e + std::min(k_log_chunk - h % k_log_chunk, log.tail - h);
        for (; e != end; ++e, ++h) {
            path_tx& p = paths[e->path()];
            if (seq_lt(e->psn, p.una)) {
                continue; // acknowledged: its record may have gone back to the pool
            }
            if (judge(*e, p)) {
                stop = true;
                break;
            }
        }
    }
    log.pop_to(logs, h);
}

// Tail-loss probe of a path that went quiet with packets out (spec 5.6). With new data
// waiting, the next new packet goes on this path and asks for an ACK: that ACK covers the
// tail if it arrived (its own ACK was lost) or shows the gap (per-path rule) if not, and
// nothing that arrived is sent twice. Otherwise the newest packet on the wire is resent.
void endpoint::impl::tail_probe(connection& c, uint32_t i, uint64_t now, bool allow_new) noexcept
{
    path_tx& p = c.ptx[i];
    uint32_t psn = p.next_psn;
    while (psn != p.una && c.rec(p, psn - 1).state != rec_state::in_flight) {
        --psn;
    }
    if (psn == p.una) {
        return; // nothing on the wire
    }
    c.fl(p).spell_probes = uint8_t(std::min<uint32_t>(c.fl(p).spell_probes + 1u, 255u));
    if (allow_new && cfg.transport.tlp_new_data && !p.tlp_new && p.state != path_state::failed && new_data_ready(c)) {
        c.tlp_paths.push(i, c.tlp_link());
        p.tlp_new = true;
        ++stats.tail_probes_new;
    } else {
        queue_retx(c, i, psn - 1);
        ++stats.tail_probes;
    }
    // The probe's answer needs a round trip: the RTO must not fire first
    // (a lost tail is chance under random loss, not a dead route).
    const uint64_t answer = now + probe_timeout(c.fl(p), first_rtt(c, cfg.transport.initial_rtt_ns),
                                                cfg.transport.ack_delay_ns,
                                                hint_queue_ns(c, cfg.frame_overhead_bytes),
                                                cfg.transport.min_probe_ns);
    if (c.fl(p).rto_deadline != k_no_deadline && c.fl(p).rto_deadline < answer) {
        set_rto(c, p, answer);
    }
}

// Path RTO (spec 5.6): resend what is outstanding, back off, and move the path to
// a new route (UDP source port), then to another plane, if timeouts repeat.
void endpoint::impl::path_timeouts(connection& c, uint64_t now) noexcept
{
    if (c.rack_deadline <= now) {
        rack_detect(c, now);
    }
    for (uint32_t i = 0; i < c.ptx.size(); ++i) {
        path_tx& p = c.ptx[i];
        if (c.fl(p).tlp_deadline <= now || c.fl(p).rto_deadline <= now) {
            settle_also(c, i, now); // a lost ACK: what it acknowledged is not resent
        }
        if (c.fl(p).tlp_deadline <= now) {
            // Tail-loss probe (spec 5.6): the path went quiet with packets out and no
            // later packet can reveal a gap; act well before the RTO.
            c.fl(p).tlp_deadline = k_no_deadline;
            tail_probe(c, i, now, true);
        }
        if (c.fl(p).rto_deadline > now) {
            continue;
        }
        if (p.state == path_state::failed) {
            // Its probe went unanswered: try yet another route.
            if (!path_timeout(c, i, now)) {
                return;
            }
            continue;
        }
        bool on_wire = false;
        for (uint32_t psn = p.una; psn != p.next_psn && !on_wire; ++psn) {
            on_wire = c.rec(p, psn).state == rec_state::in_flight;
        }
        if (!on_wire) {
            // Nothing to time out: what is outstanding is held for RNR (or already
            // queued for resending); the resend re-arms the RTO.
            c.fl(p).rto_deadline = k_no_deadline;
            continue;
        }
        requeue_in_flight(c, i);
        if (c.fl(p).timeouts + 1 > loss_slack(c, i)) {
            cc.on_timeout(c.fl(p).cc, c.cc, now); // not when the connection's loss explains it
            refresh_windows(c, p);
        }
        if (!path_timeout(c, i, now)) {
            return; // the connection failed
        }
    }
    park_all(c); // a path whose timer had nothing left to do is settled now
    mark_ready(c);
}

} // namespace metaroce
