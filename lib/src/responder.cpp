// Responder: receive windows, checks, direct placement, in-stream commit and the
// ACKs and NAKs that go back (spec 5.2, 5.4, 8). Also endpoint::on_packet, the receive
// dispatch: most packets are data, and here on_data is inlined into it.
#include <algorithm>
#include <cstring>

#include "endpoint_impl.hpp"
#include "metaroce/seq.hpp"

namespace metaroce {

using namespace detail;

namespace {

enum class verdict : uint8_t { accepted, rnr, nak, drop };

struct outcome {
    verdict v = verdict::accepted;
    wire::nak_reason reason = wire::nak_reason::invalid_request;
};

outcome nak(wire::nak_reason r) noexcept { return {verdict::nak, r}; }

wire::nak_reason from_check(mr_check c) noexcept
{
    switch (c) {
    case mr_check::bad_key: return wire::nak_reason::rkey_invalid;
    case mr_check::access_denied: return wire::nak_reason::access_denied;
    case mr_check::out_of_bounds: return wire::nak_reason::out_of_bounds;
    case mr_check::ok: break;
    }
    return wire::nak_reason::invalid_request;
}

bool is_write(wire::opcode op) noexcept
{
    return op == wire::opcode::write || op == wire::opcode::write_imm;
}

// Copies a WRITE payload to `to` (its checked address), keeping back the message's
// last bytes until commit so a program polling the last byte sees it only after
// everything else has landed.
void place_write(recv_slot& rs, uint32_t offset, std::span<const uint8_t> data, uint8_t* to) noexcept
{
    const uint32_t tail_start = rs.msg_len - rs.tail_len;
    const uint32_t end = offset + uint32_t(data.size());
    const uint32_t direct_end = std::min(end, tail_start);
    if (direct_end > offset) {
        std::memcpy(to, data.data(), direct_end - offset);
    }
    for (uint32_t i = std::max(offset, tail_start); i < end; ++i) {
        rs.tail[i - tail_start] = data[i - offset];
    }
}

} // namespace

post_result endpoint::impl::post_recv(connection& c, uint16_t stream, const recv_wr& wr)
{
    if (c.state != conn_state::connecting && c.state != conn_state::established) {
        return post_result::conn_not_usable;
    }
    if (stream >= c.streams_n) {
        return post_result::bad_stream;
    }
    if (!claim_stream(c, stream)) {
        return post_result::queue_full; // every stream record of the endpoint is in use
    }
    stream_state& ss = c.stream(stream);
    if (ss.rq == nullptr) { // once per stream
        ss.rq_size = std::max<uint16_t>(cfg.transport.rq_depth, 1);
        ss.rq = c.rqs.emplace_back(std::make_unique<posted_recv[]>(ss.rq_size)).get();
    }
    if (ss.rq_posted - ss.rq_consumed >= ss.rq_size) {
        return post_result::queue_full;
    }
    sge whole = wr.local;
    const bool listed = wr.num_sge > 1;
    if (wr.num_sge == 1 && wr.sg_list != nullptr) {
        whole = wr.sg_list[0];
    }
    int32_t list = detail::sge_pool::k_none;
    if (listed) {
        uint64_t total = 0;
        if (const post_result pr = check_list(wr.sg_list, wr.num_sge, access::local_write, total, !wr.check_at_use);
            pr != post_result::ok) {
            return pr;
        }
        list = sges.store({wr.sg_list, wr.num_sge});
        if (list == detail::sge_pool::k_none) {
            return post_result::queue_full;
        }
        whole = sge{0, uint32_t(total), 0};
    } else if (!wr.check_at_use) {
        uint8_t* host = nullptr;
        const mr_check mc = mrs.check_local(whole.lkey, whole.addr, whole.length, access::local_write, &host);
        if (mc != mr_check::ok) {
            return to_post_result(mc);
        }
    }
    posted_recv& r = ss.rq[ss.rq_posted % ss.rq_size];
    r.wr_id = wr.wr_id;
    r.addr = whole.addr;
    r.lkey = whole.lkey;
    r.length = whole.length;
    r.sgl = list;
    ++ss.rq_posted;
    return post_result::ok;
}

__attribute__((always_inline)) inline void endpoint::impl::queue_ack(connection& c, uint32_t path) noexcept
{
    path_rx& r = c.prx[path];
    if (!owe_ack(r)) {
        return; // no block free: the path's next ACK (its data's resend) says it all
    }
    queue_held_ack(c, path, c.ack(r));
}

// queue_ack for a path whose block is held.
__attribute__((always_inline)) inline void endpoint::impl::queue_held_ack(connection& c, uint32_t path,
                                                                          ack_block& a) noexcept
{
    if (!a.queued) {
        a.queued = true;
        c.ack_queue.push(path, c.ack_link());
    }
    if (!c.in_ack_ready) {
        c.in_ack_ready = ack_ready.push(slot_of(c.id));
    }
    mark_ready(c);
}

// Senders whose share shrank a lot (newcomers joined) hear it now (spec 6.4): an ACK
// on the path they last sent on, even if it acknowledges nothing new.
void endpoint::impl::push_shares() noexcept
{
    rates.for_each_stale([&](uint32_t slot, uint16_t path) {
        connection* c = slot < conns.size() ? conns[slot].get() : nullptr;
        if (c != nullptr && c->state == conn_state::established && path < c->prx.size()) {
            queue_ack(*c, path);
        }
    });
}

void endpoint::impl::flush_delayed_acks(connection& c) noexcept
{
    for (uint32_t i = 0; i < c.prx.size(); ++i) {
        if (c.ack(c.prx[i]).delayed) {
            queue_ack(c, i);
        }
    }
}

__attribute__((always_inline)) inline void endpoint::impl::on_data(connection& c, const rx_meta& m, const wire::packet_view& p,
                             uint64_t now) noexcept
{
    if (c.state != conn_state::established && c.state != conn_state::error) {
        ++stats.rx_invalid; // an initiator before ACCEPT: the peer will resend
        return;
    }
    if (p.payload.size() > c.mtu) {
        ++stats.rx_invalid;
        return;
    }
    if (c.incoming && c.hs_rtt_ns == 0 && !c.hello_phase_new && now > c.hello_first_ns) {
        // The acceptor's handshake RTT: from its ACCEPT to the initiator's first data.
        c.hs_rtt_ns = now - c.hello_first_ns;
        rates.set_rtt(slot_of(c.id), c.hs_rtt_ns);
    }
    path_rx& r = c.prx[p.path];
    r.reply_plane = m.plane;
    r.reply_sport = m.udp_sport;
    if ((p.flags & wire::bth_flag::retx) != 0) [[unlikely]] {
        // A resend or a copy: the receiver's loss estimate rises by 1/128 (build_ack
        // decays it by 1/128 per packet it acknowledges; loss-free it stays 0).
        loss_share_up(c.rx_retx_q);
    }
    // In order with no bitmap held (the sentinel's is all zero): fresh, no bitmap to read.
    const sack_window::verdict w = p.psn == r.expected && r.sack == sacks.sentinel()
                                       ? sack_window::verdict::fresh
                                       : sack_window::classify(r.expected, sacks.base()[r.sack], p.psn);
    if (w != sack_window::verdict::fresh) {
        ++(w == sack_window::verdict::duplicate ? stats.rx_duplicates : stats.rx_beyond_window);
        // A second copy of the path's newest packet (a tail probe or a proactive copy)
        // read before that packet's ACK left: the ACK owed still names the first copy,
        // which delivered (spec 3.6), so the original does not look lost. Otherwise
        // (no ACK owed, or an older packet resent: our ACK may have been lost) the
        // next ACK answers this packet.
        if (r.ack == acks.sentinel() || p.psn + 1 != r.expected) {
            r.last_ts = p.tx_ts;
        }
        queue_ack(c, p.path); // the sender may have missed our ACK
        return;
    }
    r.last_ts = p.tx_ts;
    if (p.psn != r.expected && r.sack == sacks.sentinel() && sacks.empty()) {
        // It would open a hole and no bitmap is free: not taken, not recorded, so the
        // sender resends it (the ACK shows the gap below it as it stands).
        ++stats.sack_pool_waits;
        queue_ack(c, p.path);
        return;
    }
    if (!owe_ack(r)) {
        // Every packet taken is acknowledged, and no block is free to count it in: not
        // taken, not recorded, resent like a lost one (no ACK either: none can be owed).
        return;
    }
    outcome o;
    if (c.state == conn_state::error) {
        o = nak(c.has_fatal && p.msn == c.fatal_msn ? c.fatal_reason : wire::nak_reason::invalid_request);
    } else if (p.op == wire::opcode::read_resp) {
        o.v = land_read_resp(c, p) ? verdict::accepted : verdict::drop;
    } else {
        // Request packets: find or open the inbound message slot (keyed by msn).
        if (p.read_hint_mbps != 0 && !c.cc.acked) [[unlikely]] {
            take_read_hint(c, p.read_hint_mbps, m.plane);
        }
        const bool shape_ok = p.op == wire::opcode::read_req
                                  ? p.offset == 0 && p.payload.empty()
                                  : packet_shape_ok(p.msg_len, c.mtu, p.offset, p.payload.size());
        if (p.stream >= c.streams_n) {
            o = nak(wire::nak_reason::invalid_request);
        } else if (p.msg_len > k_max_msg_len || !shape_ok) {
            ++stats.rx_bad_shape; // spec 4.3: every packet sits on the mtu grid
            o = nak(wire::nak_reason::invalid_request);
        } else {
            const uint32_t slot_i = p.msn % c.rslots.size();
            recv_slot* rsp = &c.rslots[slot_i]; // the pool's idle sentinel if no chunk is held
            const recv_slot& cur = *rsp;
            stream_state* ss = &c.stream(p.stream); // the sentinel until the stream is claimed
            bool opened = false;
            if (cur.in_use && cur.msn != p.msn) {
                // The slot still holds an older message that cannot commit yet (our CQ
                // is full). Not ready: acknowledging a packet we drop would lose it.
                o.v = verdict::rnr;
            } else if (cur.in_use && (cur.op != p.op || cur.stream != p.stream || cur.ssn != p.ssn ||
                                     cur.msg_len != p.msg_len || cur.va != p.va || cur.rkey != p.rkey)) {
                o = nak(wire::nak_reason::invalid_request);
            } else if (!cur.in_use && seq_lt(p.ssn, ss->commit_ssn)) {
                o.v = verdict::drop; // a message already committed
            } else if (!cur.in_use) {
                // First packet of this message to arrive: check it once, for all of it.
                const wire::opcode_info& oi = wire::info(p.op);
                if (oi.consumes_recv &&
                    (seq_lt(p.recv_seq, ss->rq_consumed) || !seq_lt(p.recv_seq, ss->rq_posted))) {
                    o.v = seq_lt(p.recv_seq, ss->rq_consumed) ? verdict::drop : verdict::rnr;
                    if (o.v == verdict::rnr) {
                        wanted.push(recv_wanted{c.id, p.stream}); // full: the retry repeats it
                    }
                } else if (oi.has_reth) {
                    const uint32_t need = p.op == wire::opcode::read_req ? access::remote_read
                                                                          : access::remote_write;
                    uint8_t* unused = nullptr;
                    const mr_check mc = mrs.check_remote(p.rkey, p.va, p.msg_len, need, &unused);
                    if (mc != mr_check::ok) {
                        o = nak(from_check(mc));
                    }
                } else {
                    const posted_recv& pr = ss->rq[p.recv_seq % ss->rq_size];
                    if (p.msg_len > pr.length) {
                        o = nak(wire::nak_reason::length_error);
                        c.bad_recv_stream = int32_t(p.stream);
                        c.bad_recv_seq = p.recv_seq;
                        c.bad_recv_status = wc_status::loc_len_err;
                    }
                }
                // A fresh slot chunk goes to the stream's next message to commit, or while
                // more than the reserve is free: messages that must wait for an earlier
                // one cannot take the chunks that one needs (it would never commit).
                // A stream's first message takes its record (none free: deferred the same way).
                if (o.v == verdict::accepted && !claim_stream(c, p.stream)) {
                    o.v = verdict::rnr;
                }
                ss = &c.stream(p.stream);
                if (o.v == verdict::accepted && !claim_recv_slot(c, slot_i, p.ssn == ss->commit_ssn)) {
                    o.v = verdict::rnr; // resent after the RNR delay
                }
                if (o.v == verdict::accepted) {
                    rsp = &c.rslots[slot_i]; // its chunk may be new
                    recv_slot& n = *rsp;     // built in place: every field is set here
                    n = recv_slot{};
                    n.op = p.op;
                    n.stream = p.stream;
                    n.msn = p.msn;
                    n.ssn = p.ssn;
                    n.recv_seq = p.recv_seq;
                    n.msg_len = p.msg_len;
                    n.imm = p.imm;
                    n.va = p.va;
                    n.rkey = p.rkey;
                    n.tail_len = is_write(p.op) ? uint8_t(std::min<uint32_t>(8, p.msg_len)) : 0;
                    n.solicited = (p.flags & wire::bth_flag::solicited) != 0;
                    n.pkts = packets_in(p.msg_len, c.mtu);
                    n.in_use = true;
                    opened = true;
                }
            }
            recv_slot& rs = *rsp;
            // A message that is already complete (a peer repeating a packet under a new
            // PSN) takes nothing more: linking it twice would make the pending list a cycle.
            const uint32_t n_pkts = rs.pkts;
            const bool was_complete = !opened && (rs.op == wire::opcode::read_req || rs.got.seen >= n_pkts);
            if (o.v == verdict::accepted && !was_complete) {
                if (const place_outcome pl = place(c, rs, *ss, p); !pl.ok) {
                    o = nak(pl.reason);
                }
            }
            if (o.v == verdict::accepted && !was_complete) {
                bool corrupt = false;
                const bool complete = rs.op == wire::opcode::read_req ||
                                      cover_n(rs.got, coverage_key, p.offset, n_pkts, c.mtu, corrupt);
                if (corrupt) {
                    // Every packet count arrived but not every offset: some were repeated
                    // in place of others, so bytes of the message were never written.
                    ++stats.rx_bad_shape;
                    o = nak(wire::nak_reason::invalid_request);
                } else if (complete) {
                    rs.next_pending = ss->pending;
                    ss->pending = int32_t(p.msn % c.rslots.size());
                    try_commit(c, p.stream);
                }
            }
        }
    }

    switch (o.v) {
    case verdict::accepted:
    case verdict::drop: {
        if (o.v == verdict::drop) {
            ++stats.rx_invalid; // counted, and acknowledged so the path keeps moving
        }
        // A newcomer re-splits the shares: its first ACK carries its final share (spec 6.4).
        // (No call when the receiver shares no link rate: the default.)
        const bool joined = rates.enabled() &&
                            rates.on_packet(slot_of(c.id), uint32_t(p.payload.size()), m.ce, now, p.path,
                                            p.tx_ts, (p.flags & wire::bth_flag::retx) != 0);
        if ((p.flags & wire::bth_flag::drained) != 0 && rates.enabled()) {
            rates.drained(slot_of(c.id), p.tx_ts, now); // nothing more queued there (spec 6.4)
        }
        if (rates.take_resplit()) {
            push_shares();
        }
        const uint32_t before = r.expected;
        bool hole = false;
        if (p.psn == before && r.sack == sacks.sentinel()) [[likely]] {
            ++r.expected; // in order and no bitmap held (the sentinel's is all zero): no hole
        } else {
            if (p.psn != before && r.sack == sacks.sentinel()) {
                r.sack = sacks.take(); // a hole opens (on_data saw a free bitmap)
            }
            sack_window::bitmap& bits = sacks.base()[r.sack];
            sack_window::record(r.expected, bits, p.psn);
            hole = sack_window::any(bits);
            if (!hole && r.sack != sacks.sentinel()) {
                sacks.give(r.sack); // the run is complete: nothing above expected
                r.sack = sacks.sentinel();
            }
        }
        ack_block& ab = c.ack(r); // taken above (push_shares keeps what it finds)
        ab.bytes_since_ack += uint32_t(p.payload.size());
        ab.rx_pkts = uint16_t(std::min<uint32_t>(0xffff, ab.rx_pkts + 1u));
        if (m.ce) {
            ab.ce_pkts = uint16_t(std::min<uint32_t>(0xffff, ab.ce_pkts + 1u));
            ++stats.rx_ce;
        }
        const bool now_ack = joined || (p.flags & wire::bth_flag::ack_req) != 0 || m.ce || p.psn != before ||
                             hole || ab.bytes_since_ack >= cfg.transport.ack_every_bytes;
        if (now_ack) {
            queue_held_ack(c, p.path, ab);
        } else if (!ab.delayed) {
            ab.delayed = true;
            c.ack_deadline = std::min(c.ack_deadline, now + cfg.transport.ack_delay_ns);
            c.conn_deadline = std::min(c.conn_deadline, c.ack_deadline);
        }
        break;
    }
    case verdict::rnr:
    case verdict::nak: {
        if (o.v == verdict::rnr) {
            ++stats.rx_rnr;
            o.reason = wire::nak_reason::rnr;
        } else if (o.reason == wire::nak_reason::rkey_invalid ||
                   o.reason == wire::nak_reason::access_denied ||
                   o.reason == wire::nak_reason::out_of_bounds) {
            ++stats.rx_access_errors;
        }
        nak_entry e;
        e.path = p.path;
        e.psn = p.psn;
        e.hdr.reason = o.reason;
        e.hdr.stream = wire::be16_t::from_host(p.stream);
        e.hdr.msn = wire::be32_t::from_host(p.msn);
        if (!c.naks.push(nak_rings, e)) { // bounded; a lost NAK is repeated when the packet is resent
            ++stats.nak_drops;
        }
        settle_ack(c.prx[p.path]); // taken above for an ACK this packet does not owe
        mark_ready(c);
        if (o.v == verdict::nak && c.state != conn_state::error) {
            mark_fatal(c, o.reason, p.msn);
            enter_error(c, wc_status::wr_flush_err);
        }
        break;
    }
    }
}

// A READ_REQ's share for the responses, before their first ACK (spec 6.4): their timers
// allow for the queue every responder's first packets build at the requester (spec 5.6),
// as an initiator's do with its ACCEPT's share, and they are paced at it from the first
// (6.5). They start on the plane the READ_REQ came on: the reader gave each slot its
// plane in turn, so its last hops share the responders' first packets evenly, and round
// robin keeps it so.
__attribute__((noinline)) void endpoint::impl::take_read_hint(connection& c, uint32_t mbps, uint8_t plane) noexcept
{
    c.early_hint_mbps = std::max(mbps, cfg.transport.cc.min_rate_hint_mbps);
    if (c.job_tx == c.job_count) {
        start_on_plane(c, plane);
    }
}

// Commits complete messages of a stream in ssn order: writes held tail bytes,
// consumes receives and reports them, starts READ responses.
void endpoint::impl::try_commit(connection& c, uint16_t stream) noexcept
{
    stream_state& ss = c.stream(stream);
    for (;;) {
        int32_t* link = &ss.pending;
        while (*link != k_nil && c.rslots[*link].ssn != ss.commit_ssn) {
            link = &c.rslots[*link].next_pending;
        }
        if (*link == k_nil) {
            return;
        }
        recv_slot& rs = c.rslots[*link];
        const wire::opcode_info& oi = wire::info(rs.op);
        if (rs.op == wire::opcode::read_req) {
            if (c.job_count == c.jobs.size()) {
                return; // resumed when a job finishes
            }
            const uint32_t ji = (c.job_head + c.job_count) % c.jobs.size();
            if (!claim_slot(job_slots, c.jobs, ji)) {
                wait_for_jobs(c); // resumed when any connection's job chunk is returned
                return;
            }
            read_job& j = c.jobs[ji];
            j = read_job{};
            j.in_use = true;
            j.stream = rs.stream;
            j.msn = rs.msn;
            j.va = rs.va;
            j.rkey = rs.rkey;
            j.len = rs.msg_len;
            j.pkts_total = packets_in(rs.msg_len, c.mtu);
            ++c.job_count;
            mark_ready(c);
        } else if (oi.consumes_recv) {
            if (rs.recv_seq != ss.rq_consumed) {
                // Receives are consumed in posting order (spec 4.1): a message naming
                // another than the next one would complete the wrong receive.
                ++stats.rx_invalid;
                mark_fatal(c, wire::nak_reason::invalid_request, rs.msn);
                enter_error(c, wc_status::wr_flush_err);
                return;
            }
            const posted_recv& pr = ss.rq[rs.recv_seq % ss.rq_size];
            completion wc;
            wc.wr_id = pr.wr_id;
            wc.conn = c.id;
            wc.stream = stream;
            wc.op = rs.op == wire::opcode::write_imm ? wc_opcode::recv_rdma_with_imm : wc_opcode::recv;
            wc.byte_len = rs.msg_len;
            wc.has_imm = oi.has_imm;
            wc.solicited = rs.solicited;
            wc.imm = rs.imm;
            if (!push_cq(c, wc)) {
                return; // resumed by poll_cq
            }
            consume_recv(ss);
        }
        if (rs.tail_len > 0) {
            // Checked again: the region may have been deregistered since the last packet.
            uint8_t* to = nullptr;
            const uint64_t at = rs.va + rs.msg_len - rs.tail_len;
            if (mrs.check_remote(rs.rkey, at, rs.tail_len, access::remote_write, &to) == mr_check::ok) {
                std::memcpy(to, rs.tail, rs.tail_len);
            } else {
                ++stats.rx_access_errors;
            }
        }
        const uint32_t done = uint32_t(*link);
        *link = rs.next_pending;
        rs.in_use = false;
        release_slot(recv_slots, c.rslots, done);
        ++ss.commit_ssn;
        ++c.rx_msgs_committed;
    }
}

// Places one request packet's payload after checking its own range (spec 8.3): a region
// deregistered, or a receive whose buffer went away, since the first packet fails here
// and nothing is written.
__attribute__((always_inline)) inline endpoint::impl::place_outcome endpoint::impl::place(connection& c, recv_slot& rs, stream_state& ss,
                                                    const wire::packet_view& p) noexcept
{
    const auto len = uint32_t(p.payload.size());
    uint8_t* to = nullptr;
    if (is_write(rs.op)) {
        // The message's whole range checked once per region epoch; a packet lies inside it.
        if (rs.mr_tag == mrs.epoch() || check_msg(rs)) [[likely]] {
            to = mrs.host_at(rs.rkey, rs.va + p.offset);
        } else if (const mr_check mc = mrs.check_remote(rs.rkey, rs.va + p.offset, len, access::remote_write, &to);
                   mc != mr_check::ok) {
            return {false, from_check(mc)};
        }
        place_write(rs, p.offset, p.payload, to);
    } else if (rs.op != wire::opcode::read_req) {
        const posted_recv& pr = ss.rq[rs.recv_seq % ss.rq_size];
        const sge whole{pr.addr, pr.length, pr.lkey};
        if (scatter(whole, pr.sgl, p.offset, p.payload) != mr_check::ok) {
            c.bad_recv_stream = int32_t(rs.stream);
            c.bad_recv_seq = rs.recv_seq;
            c.bad_recv_status = wc_status::loc_prot_err;
            return {false, wire::nak_reason::remote_operation};
        }
    }
    stats.rx_payload_bytes += len;
    return {};
}

// The source of a READ being answered failed its check (deregistered or shrunk): the
// requester learns it by a NAK naming the READ (spec 8.5) and both sides fail.
void endpoint::impl::fail_read_job(connection& c, read_job& j, mr_check why) noexcept
{
    nak_entry e;
    e.path = 0;
    e.psn = 0;
    e.hdr.reason = from_check(why);
    e.hdr.stream = wire::be16_t::from_host(j.stream);
    e.hdr.msn = wire::be32_t::from_host(j.msn);
    if (!c.naks.push(nak_rings, e)) {
        ++stats.nak_drops; // the connection is failing: later packets are NAKed too (spec 7.5)
    }
    ++stats.rx_access_errors;
    mark_fatal(c, e.hdr.reason, j.msn);
    c.local_fault = true; // poll_tx moves the connection to ERROR once the packet is done
}

void endpoint::impl::on_job_done(connection& c) noexcept
{
    bool gave = false;
    while (c.job_count > 0 && c.jobs[c.job_head].done) {
        c.jobs[c.job_head] = read_job{};
        gave = release_job(c, c.job_head) || gave;
        c.job_head = (c.job_head + 1) % c.jobs.size();
        --c.job_count;
        --c.job_tx;
    }
    for (uint16_t s = 0; s < c.stream_slots(); ++s) {
        try_commit(c, s); // a READ may have waited for a free job
    }
    if (gave) {
        wake_job_waiters();
    }
}

void endpoint::impl::wait_for_jobs(connection& c) noexcept
{
    if (!c.job_waiting) {
        c.job_waiting = true;
        job_waiters.push_back(slot_of(c.id)); // reserved for every connection slot
    }
}

// Job chunks came back: connections that found none try their READs again.
void endpoint::impl::wake_job_waiters() noexcept
{
    while (!job_waiters.empty() && !job_slots.empty()) {
        const uint32_t idx = job_waiters.back();
        job_waiters.pop_back();
        connection* w = conns[idx].get();
        if (w == nullptr || !w->job_waiting) {
            continue;
        }
        w->job_waiting = false;
        if (w->state == conn_state::established) {
            for (uint16_t s = 0; s < w->stream_slots(); ++s) {
                try_commit(*w, s);
            }
        }
    }
}

// True when the slot's chunk went back to the pool.
bool endpoint::impl::release_job(connection& c, uint32_t i) noexcept
{
    const uint16_t d = c.jobs.dir[i >> k_slot_shift];
    release_slot(job_slots, c.jobs, i);
    return c.jobs.dir[i >> k_slot_shift] != d;
}

void endpoint::impl::release_jobs(connection& c) noexcept
{
    bool gave = false;
    for (uint16_t& d : c.jobs.dir) {
        if (d != job_slots.sentinel()) {
            job_slots.give(d);
            d = job_slots.sentinel();
            gave = true;
        }
    }
    if (c.job_waiting) {
        c.job_waiting = false;
        std::erase(job_waiters, slot_of(c.id));
    }
    if (gave) {
        wake_job_waiters();
    }
}

bool endpoint::impl::produce_nak(connection& c, uint64_t now, tx_frame& f) noexcept
{
    if (c.naks.empty()) {
        return false;
    }
    const nak_entry e = c.naks.front(nak_rings);
    c.naks.pop(nak_rings);
    const path_rx& r = c.prx[e.path];
    wire::bth_fields b = bth_for(c, wire::opcode::nak, e.path, r.reply_plane, now);
    b.psn = e.psn;
    f.len = wire::build_nak(f.buf, b, e.hdr);
    fill_frame_route(c, r.reply_plane, r.reply_sport, f);
    ++stats.tx_naks;
    return f.len > 0;
}

bool endpoint::impl::produce_ack(connection& c, uint64_t now, tx_frame& f) noexcept
{
    return build_ack(c, now, f);
}

// Under loss the ACK just built goes twice (spec 3.6): kept here, the copy is the next
// frame produce_ack_first sends, on the next path's reply route (normally another plane),
// so a lost ACK neither holds its packets in the sender's window until a probe timer nor
// ends in a timeout at a message's tail. A sender takes the second to arrive as a
// repeat: it settles nothing, so it is no RTT, ECN or window sample.
__attribute__((noinline)) void endpoint::impl::keep_ack_copy(connection& c, uint32_t path, const tx_frame& f) noexcept
{
    const path_rx& r = c.prx[path];
    const path_rx& q = c.prx[path + 1 < c.paths ? path + 1 : 0];
    const bool other = q.reply_sport != 0;
    std::memcpy(ack_copy.bytes.data(), f.buf.data(), f.len);
    ack_copy.len = uint8_t(f.len);
    ack_copy.plane = other ? q.reply_plane : r.reply_plane;
    ack_copy.udp_sport = other ? q.reply_sport : r.reply_sport;
    ack_copy.bytes[offsetof(wire::bth, plane)] = ack_copy.plane;
    ack_copy.dst_addr = c.peer_addr;
    if (!c.in_ack_ready) {
        c.in_ack_ready = ack_ready.push(slot_of(c.id)); // produce_ack_first sends the copy
    }
}

// produce_ack's body, inline here: produce_ack_first (below) takes most ACKs out.
__attribute__((always_inline)) inline bool endpoint::impl::build_ack(connection& c, uint64_t now, tx_frame& f) noexcept
{
    if (c.ack_queue.empty()) {
        return false;
    }
    const uint32_t path = c.ack_queue.front();
    c.ack_queue.pop(c.ack_link());
    path_rx& r = c.prx[path];
    ack_block& ab = c.ack(r);
    wire::bth_fields b = bth_for(c, wire::opcode::ack, uint8_t(path), r.reply_plane, now);
    b.psn = r.expected;
    wire::ack_header a{};
    a.ts_echo = wire::be32_t::from_host(r.last_ts);
    // No hint (and no call) while the receiver shares no link rate, the default.
    const uint32_t hint = rates.enabled() ? rates.hint_mbps(slot_of(c.id)) : 0;
    rates.told(slot_of(c.id), hint);
    a.rate_hint_mbps = wire::be32_t::from_host(hint);
    a.rx_pkts = wire::be16_t::from_host(ab.rx_pkts);
    if (c.rx_retx_q != 0) {
        loss_share_down(c.rx_retx_q, ab.rx_pkts);
    }
    a.ce_pkts = wire::be16_t::from_host(ab.ce_pkts);
    sack_window::to_wire(sacks.base()[r.sack], a.sack);
    if (c.last_ack_path >= 0 && c.last_ack_path != int32_t(path)) {
        // The previous ACK, repeated in short: if it was lost, the data it acknowledged
        // is not resent (spec 3.6).
        const uint32_t q = uint32_t(c.last_ack_path);
        a.also_cum = wire::be32_t::from_host(wire::pack_also_cum(uint8_t(q), c.prx[q].expected));
        b.flags |= wire::bth_flag::also_acks;
    }
    c.last_ack_path = int32_t(path);
    give_ack(r, ab); // nothing is owed once it is built
    f.len = wire::build_ack(f.buf, b, a);
    fill_frame_route(c, r.reply_plane, r.reply_sport, f);
    ++stats.tx_acks;
    if (c.rx_retx_q >= k_copy_loss && f.len == ack_copy.bytes.size()) [[unlikely]] {
        keep_ack_copy(c, path, f);
    }
    return f.len > 0;
}

// The pending copy of the last ACK (build_ack), the next frame out of produce_ack_first.
bool endpoint::impl::produce_ack_copy(tx_frame& f) noexcept
{
    if (f.buf.size() < ack_copy.len) {
        return false;
    }
    std::memcpy(f.buf.data(), ack_copy.bytes.data(), ack_copy.len);
    f.len = ack_copy.len;
    f.dst_addr = ack_copy.dst_addr;
    f.plane = ack_copy.plane;
    f.udp_sport = ack_copy.udp_sport;
    f.ect = true;
    ack_copy.len = 0;
    ++stats.tx_ack_copies;
    ++stats.tx_packets;
    stats.tx_bytes += f.len;
    return true;
}

// One ACK or NAK from the ack ring (here, beside produce_ack, so it is inlined). Queued
// behind a round of this node's own data packets, ACKs would make the peers' RTTs swing
// with our send load, and their tail probes and RTOs fire with nothing lost (issue 12).
bool endpoint::impl::produce_ack_first(uint64_t now, tx_frame& f) noexcept
{
    if (ack_copy.len != 0 && produce_ack_copy(f)) {
        return true; // the last ACK's copy first: ack_ready holds its connection meanwhile
    }
    while (!ack_ready.empty()) {
        const uint32_t idx = ack_ready.front();
        ack_ready.pop();
        connection* c = conns[idx].get();
        if (c == nullptr) {
            continue;
        }
        c->in_ack_ready = false;
        if (c->state == conn_state::connecting || c->state == conn_state::closed) {
            continue;
        }
        if ((!c->naks.empty() && produce_nak(*c, now, f)) || (!c->ack_queue.empty() && build_ack(*c, now, f))) {
            if (!c->naks.empty() || !c->ack_queue.empty()) {
                c->in_ack_ready = ack_ready.push(idx);
            }
            ++stats.tx_packets;
            stats.tx_bytes += f.len;
            return true;
        }
    }
    return false;
}

// Every packet in: parsed, matched to its connection and handed to its handler. Here,
// with on_data, so the data path (most packets) is one function.
void endpoint::on_packet(const rx_meta& meta, std::span<const uint8_t> bytes, uint64_t now)
{
    impl& e = *impl_;
    e.clock = now;
    ++e.stats.rx_packets;
    e.stats.rx_bytes += bytes.size();
    wire::packet_view p; // filled by parse_view (not cleared first: this runs per packet)
    if (const wire::parse_error err = wire::parse_view(bytes, p); err != wire::parse_error::none) {
        ++e.stats.rx_malformed[size_t(err)];
        return;
    }
    // Data, ACK and NAK opcodes sit below the handshake and probe ones (headers.hpp):
    // one compare keeps most packets out of these three tests.
    static_assert(wire::opcode::read_resp < wire::opcode::ack && wire::opcode::nak < wire::opcode::connect);
    if (p.op >= wire::opcode::connect) [[unlikely]] {
        if (p.op == wire::opcode::connect) {
            e.on_connect(meta, p, now);
            return;
        }
        if (p.op == wire::opcode::close) {
            e.on_close(meta, p, now);
            return;
        }
        if (p.op == wire::opcode::probe) {
            e.on_probe(meta, p, now);
            return;
        }
    }
    connection* c = e.find(p.dst_conn);
    if (c == nullptr) {
        ++e.stats.rx_unknown_conn;
        return;
    }
    if (meta.src_addr != c->peer_addr) {
        ++e.stats.rx_wrong_peer;
        return;
    }
    const wire::opcode_info& oi = wire::info(p.op);
    // Paths exist only once the handshake sized them: a connection that failed while
    // connecting has none, whatever its configured count.
    if (p.path >= c->ptx.size() && (oi.reliable || p.op == wire::opcode::ack || p.op == wire::opcode::nak)) {
        ++e.stats.rx_bad_path;
        return;
    }
    e.heard_from_peer(*c, now);
    const uint64_t freed = e.conns_freed;
    switch (p.op) {
    case wire::opcode::cookie: e.on_cookie(*c, p, now); break;
    case wire::opcode::accept: e.on_accept(*c, p, now); break;
    case wire::opcode::close_ack: e.on_close_ack(*c, p); break;
    case wire::opcode::probe_ack: e.on_probe_ack(*c, meta, p, now); break;
    case wire::opcode::ack: e.on_ack(*c, p, now); break;
    case wire::opcode::nak: e.on_nak(*c, p, now); break;
    default: e.on_data(*c, meta, p, now); break;
    }
    if (e.conns_freed == freed || e.find(p.dst_conn) != nullptr) {
        e.recompute_timer(*c, now);
    }
}

} // namespace metaroce
