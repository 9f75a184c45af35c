// Connection lifecycle (spec 7): CONNECT/ACCEPT with parameter negotiation,
// CLOSE/CLOSE_ACK, control retransmission, teardown and the error flush.
#include <algorithm>

#include "endpoint_impl.hpp"
#include "siphash.hpp"

namespace metaroce {

using namespace detail;

namespace {

uint64_t peer_key(uint32_t addr, uint32_t conn) noexcept { return (uint64_t(addr) << 32) | conn; }

wire::hello_header make_hello(const connection& c, const transport_config& t, uint32_t hint_mbps)
{
    wire::hello_header h{};
    h.nonce = wire::be64_t::from_host(c.nonce);
    h.src_conn = wire::be32_t::from_host(c.id);
    h.isn = wire::be32_t::from_host(c.isn);
    h.paths = wire::be16_t::from_host(c.paths);
    h.mtu = wire::be16_t::from_host(c.mtu);
    h.max_streams = wire::be16_t::from_host(c.streams_n);
    h.max_msgs = wire::be16_t::from_host(c.max_msgs);
    h.planes = c.planes;
    h.rq_depth = wire::be16_t::from_host(t.rq_depth);
    h.cookie = wire::be64_t::from_host(c.incoming ? 0 : c.cookie);
    if (c.incoming) {
        h.rate_hint_mbps = wire::be32_t::from_host(hint_mbps);
    } else {
        // The acceptor's first timers and its reservation of a rate share wait this long
        // for our data (spec 3.8, 6.4).
        h.rtt_us = wire::be32_t::from_host(uint32_t(std::min<uint64_t>(UINT32_MAX, (c.hs_rtt_ns + 999) / 1000)));
    }
    return h;
}

// Cookies are valid for the time bucket they were made in and the one after (spec 7.7):
// 2^30 ns, so between about 1.07 and 2.15 s.
constexpr uint32_t k_cookie_bucket_shift = 30;

// Takes the smaller of each side's limits (spec 7.2). Values of 0 are invalid.
bool negotiate(connection& c, const wire::hello_header& h)
{
    const uint16_t paths = h.paths.host();
    const uint16_t mtu = h.mtu.host();
    const uint16_t streams = h.max_streams.host();
    const uint16_t msgs = h.max_msgs.host();
    if (paths == 0 || paths > wire::k_sack_bits || mtu < 64 || streams == 0 || msgs == 0 ||
        h.planes == 0) {
        return false;
    }
    c.paths = std::min(c.paths, paths);
    c.mtu = std::min(c.mtu, mtu);
    c.streams_n = std::min(c.streams_n, streams);
    c.max_msgs = std::min(c.max_msgs, msgs);
    c.planes = std::min(c.planes, h.planes);
    return true;
}

} // namespace

uint16_t endpoint::impl::path_entropy(const connection& c, uint32_t path, uint32_t epoch) const noexcept
{
    uint64_t z = (uint64_t(c.id) << 32 | c.isn) ^ (uint64_t(path) << 48) ^ (uint64_t(epoch) << 20) ^ cfg.seed;
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdull;
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ull;
    z ^= z >> 33;
    return uint16_t(wire::k_udp_sport_min + z % cfg.entropy_ports);
}

connection* endpoint::impl::create_conn(uint32_t peer_addr, bool incoming)
{
    if (free_slots.empty()) {
        return nullptr;
    }
    const uint32_t idx = free_slots.back();
    free_slots.pop_back();
    // The high half of a connection id is random (never 0, never the slot's previous
    // one), so ids cannot be predicted by a third party and a stale id misses its slot.
    uint16_t gen;
    do {
        gen = uint16_t(random64());
    } while (gen == 0 || gen == generation[idx]);
    generation[idx] = gen;
    auto c = std::make_unique<connection>();
    const transport_config& t = cfg.transport;
    c->id = (uint32_t(gen) << 16) | (idx + 1);
    c->peer_addr = peer_addr;
    c->incoming = incoming;
    c->nonce = random64();
    c->probe_token = uint32_t(random64());
    c->isn = uint32_t(random64());
    c->last_rx = clock;
    c->paths = std::clamp<uint16_t>(t.paths, 1, wire::k_sack_bits);
    c->mtu = t.mtu;
    c->streams_n = std::max<uint16_t>(t.max_streams, 1);
    c->max_msgs = std::max<uint16_t>(t.max_msgs, 1);
    c->planes = std::max<uint8_t>(t.planes, 1);
    c->sq.reset(send_slots.base(), send_slots.sentinel(), c->max_msgs);
    // Stream records are taken at a stream's first use and receive rings sized by its
    // first post_recv: a connection with many streams (one per Verbs QP) pays for the
    // ones it uses.
    c->sdir.assign(c->streams_n, stream_recs.sentinel());
    c->strs = stream_recs.base();
    c->jobs.reset(job_slots.base(), job_slots.sentinel(), std::max<uint16_t>(t.max_reads, 1));
    c->recs = records.base();
    c->fls = flights.base();
    c->acks = acks.base();
    cc.init(c->cc);
    refresh_windows(*c);
    connection* raw = c.get();
    conns[idx] = std::move(c);
    return raw;
}

// Called once the peer's parameters are known; sizes everything that depends on them.
void endpoint::impl::init_paths(connection& c, uint32_t peer_isn)
{
    const transport_config& t = cfg.transport;
    c.ptx.resize(c.paths);
    c.plane_rtts.assign(std::max<uint32_t>(c.planes, 1), plane_rtt{});
    c.prx.resize(c.paths);
    for (uint32_t i = 0; i < c.paths; ++i) {
        path_tx& p = c.ptx[i];
        p.blk = flights.sentinel();
        p.next_psn = c.isn;
        p.una = c.isn;
        p.home_plane = uint8_t(i % c.planes);
        p.plane = pick_plane(c, p.home_plane, false);
        p.udp_sport = path_entropy(c, i, 0);
        // The first block starts from these (claim_next; its RTO from first_rtt then).
        path_cc_state pc;
        cc.init(pc);
        p.cwnd_q = pack_cwnd(pc.cwnd);
        p.alpha_q = pack_alpha(pc.alpha);
        path_rx& r = c.prx[i];
        r.expected = peer_isn;
        r.sack = sacks.sentinel();
        r.ack = acks.sentinel();
        r.reply_plane = p.plane;
        r.reply_sport = p.udp_sport;
    }
    // Start each connection's round robin at a different path, so many connections do
    // not all put their first packets on the same plane.
    c.rr_path = uint32_t(random64() % c.paths);
    c.rslots.reset(recv_slots.base(), recv_slots.sentinel(), c.max_msgs); // once: a connection is set up once
    // c.sdir keeps its local size: requests posted while connecting may name
    // streams beyond the agreed count; on_accept fails those.
    // Room for every packet the windows allow on the wire (entries of settled packets
    // leave when they reach the front; on overflow the oldest goes, to the tail probe).
    c.sent_order.cap = uint32_t(std::max<double>(1, std::min<double>(double(c.paths) * k_path_window, t.cc.conn_cwnd_max)));
}

uint64_t endpoint::impl::make_cookie(uint32_t addr, uint32_t src_conn, uint64_t nonce,
                                     uint64_t bucket) const noexcept
{
    detail::siphash24 h(cookie_key[0], cookie_key[1]);
    const uint64_t cookie = h.word(nonce).word(uint64_t(addr) << 32 | src_conn).word(bucket).finish();
    return cookie != 0 ? cookie : 1; // 0 means "no cookie" on the wire
}

bool endpoint::impl::cookie_valid(uint32_t addr, const wire::hello_header& h, uint64_t now) const noexcept
{
    const uint64_t got = h.cookie.host();
    const uint64_t bucket = now >> k_cookie_bucket_shift;
    const uint32_t src_conn = h.src_conn.host();
    const uint64_t nonce = h.nonce.host();
    return got != 0 && (got == make_cookie(addr, src_conn, nonce, bucket) ||
                        (bucket > 0 && got == make_cookie(addr, src_conn, nonce, bucket - 1)));
}

// spec 7.7: a CONNECT without a valid cookie gets a COOKIE and leaves no state behind;
// only an initiator that received it (so owns its address) gets a connection.
void endpoint::impl::on_connect(const rx_meta& m, const wire::packet_view& p, uint64_t now)
{
    const wire::hello_header& h = *p.hello;
    const uint32_t src_conn = h.src_conn.host();
    if (!cfg.accept_incoming || src_conn == k_no_conn) {
        ++stats.rx_invalid;
        return;
    }
    if (!cookie_valid(m.src_addr, h, now)) {
        if (h.cookie.host() != 0) {
            ++stats.rx_bad_cookie;
        }
        ctrl_reply r;
        r.op = wire::opcode::cookie;
        r.dst_addr = m.src_addr;
        r.dst_conn = src_conn;
        r.plane = m.plane;
        r.udp_sport = m.udp_sport;
        r.nonce = h.nonce.host();
        r.ts_echo = p.tx_ts;
        r.cookie = make_cookie(m.src_addr, src_conn, r.nonce, now >> k_cookie_bucket_shift);
        if (replies.push(r)) { // bounded: a flood is answered only as fast as we send
            ++stats.cookies_sent;
        }
        return;
    }
    const auto it = by_peer.find(peer_key(m.src_addr, src_conn));
    if (it != by_peer.end()) {
        connection* c = find(it->second);
        if (c != nullptr && c->nonce == h.nonce.host()) {
            // A copy of the CONNECT answered (7.3) repeats its timestamp: answered already.
            if (c->state == conn_state::established && p.tx_ts != c->hello_answered_ts) {
                c->hello_answered_ts = p.tx_ts;
                queue_hello(*c); // our ACCEPT was lost: say it again
                c->hello_plane = m.plane; // on the route this CONNECT took
                c->hello_sport = m.udp_sport;
                mark_ready(*c);
            }
            return;
        }
        // A new attempt under a connection id we already serve, from an initiator that
        // proved it owns the address: the peer restarted and lost that connection. Ours
        // is stale (its windows and receives belong to the old life): fail it and serve
        // the new attempt.
        if (c != nullptr) {
            enter_error(*c, wc_status::wr_flush_err);
            free_conn(*c);
        } else {
            by_peer.erase(it);
        }
    }
    connection* c = create_conn(m.src_addr, true);
    if (c == nullptr) {
        ++stats.rx_invalid;
        return;
    }
    if (!negotiate(*c, h)) {
        ++stats.rx_invalid;
        free_conn(*c);
        return;
    }
    c->peer_conn = src_conn;
    c->nonce = h.nonce.host(); // ACCEPT echoes the attempt it answers
    c->state = conn_state::established;
    // The initiator's measured round trip: our first timers and the share we set aside
    // for it last that long (a claim only about this connection, capped).
    c->hs_rtt_ns = std::min<uint64_t>(uint64_t(h.rtt_us.host()) * 1000, cfg.transport.max_rto_ns);
    rates.expect(slot_of(c->id), now); // a peer connects to send (spec 6.4)
    rates.set_rtt(slot_of(c->id), c->hs_rtt_ns);
    init_paths(*c, h.isn.host());
    by_peer[peer_key(m.src_addr, src_conn)] = c->id;
    queue_hello(*c);
    c->hello_answered_ts = p.tx_ts;
    c->hello_plane = m.plane;
    c->hello_sport = m.udp_sport;
    c->keepalive_next = now + cfg.transport.keepalive_ns;
    refresh_deadlines(*c);
    push_event(conn_event::kind::established, *c);
    mark_ready(*c);
    recompute_timer(*c, now);
}

void endpoint::impl::on_cookie(connection& c, const wire::packet_view& p, uint64_t now)
{
    if (c.state != conn_state::connecting || p.cookie->nonce.host() != c.nonce ||
        p.cookie->cookie.host() == 0) {
        ++stats.rx_bad_cookie;
        return;
    }
    if (p.cookie->cookie.host() == c.cookie) {
        return; // the answer to another copy of our CONNECT: already on our way
    }
    if (c.cookie == 0) {
        // The round trip of the very CONNECT copy it answers, however many were resent;
        // the CONNECT that follows tells the acceptor.
        const uint32_t rtt = uint32_t(now) - p.cookie->ts_echo.host(); // wraps with the clock
        c.hs_rtt_ns = std::min<uint64_t>(rtt, cfg.transport.max_rto_ns);
    }
    c.cookie = p.cookie->cookie.host();
    c.hello_phase_new = true; // the next phase: CONNECT with the cookie -> ACCEPT
    // Progress: the CONNECT with the cookie retries on a fresh schedule, not on the
    // backed-off one of the CONNECTs that drew the COOKIE (spec 7.3). At 10 % loss that
    // backed-off schedule stretched some set-ups by 0.4 ms.
    c.ctrl_retries = 0;
    c.ctrl_deadline = now + cfg.transport.connect_retry_ns;
    refresh_deadlines(c);
    queue_hello(c); // CONNECT again at once, now with the cookie
    mark_ready(c);
}

void endpoint::impl::on_accept(connection& c, const wire::packet_view& p, uint64_t now)
{
    if (c.state != conn_state::connecting) {
        return; // duplicate ACCEPT
    }
    const wire::hello_header& h = *p.hello;
    if (h.nonce.host() != c.nonce || !negotiate(c, h)) {
        ++stats.rx_invalid;
        return;
    }
    c.peer_conn = h.src_conn.host();
    c.state = conn_state::established;
    c.ctrl_deadline = k_no_deadline;
    if (c.ctrl_retries == c.hello_phase_retries && !c.hello_phase_new && now > c.hello_sent_ns) {
        c.hs_rtt_ns = now - c.hello_sent_ns; // no CONNECT resent since the COOKIE: not ambiguous
    }
    c.keepalive_next = now + cfg.transport.keepalive_ns;
    refresh_deadlines(c);
    init_paths(c, h.isn.host());
    // The acceptor's share before any ACK (spec 6.4): it tells the first packets'
    // timers how deep the queue of every sender's first packets may be (spec 5.6).
    if (const uint32_t hint = h.rate_hint_mbps.host(); hint != 0) {
        c.early_hint_mbps = std::max(hint, cfg.transport.cc.min_rate_hint_mbps);
    }
    by_peer[peer_key(c.peer_addr, c.peer_conn)] = c.id;
    push_event(conn_event::kind::established, c);
    // Requests posted while connecting on streams the peer does not have can never
    // be delivered: they fail now instead of being sent.
    for (uint16_t st = c.streams_n; st < c.stream_slots(); ++st) {
        stream_state& ss = c.stream(st);
        for (int32_t i = ss.head; i != k_nil; i = c.sq[i].next_in_stream) {
            c.sq[i].done = true;
            c.sq[i].status = wc_status::rem_inv_req_err;
        }
        try_complete(c, st);
        while (ss.rq_consumed != ss.rq_posted) {
            completion wc;
            wc.wr_id = ss.rq[ss.rq_consumed % ss.rq_size].wr_id;
            wc.conn = c.id;
            wc.stream = st;
            wc.status = wc_status::wr_flush_err;
            wc.op = wc_opcode::recv;
            if (!push_cq(c, wc)) {
                break;
            }
            consume_recv(ss);
        }
    }
    mark_ready(c);
}

void endpoint::impl::on_close(const rx_meta& m, const wire::packet_view& p, uint64_t now)
{
    const uint32_t src_conn = p.close->src_conn.host();
    const uint32_t token = p.close->token.host();
    connection* c = find(p.dst_conn);
    if (c != nullptr && c->peer_addr == m.src_addr && !c->free_pending) {
        // spec 7.4: only the peer that took part in the handshake may close it.
        if (c->peer_conn != src_conn || uint32_t(c->nonce) != token) {
            ++stats.rx_bad_token;
            return;
        }
        flush(*c);
        c->state = conn_state::closed;
        push_event(conn_event::kind::closed, *c);
        free_conn(*c);
    }
    // CLOSE_ACK goes out even for a connection already gone, so the peer can finish.
    ctrl_reply r;
    r.op = wire::opcode::close_ack;
    r.dst_addr = m.src_addr;
    r.dst_conn = src_conn;
    r.src_conn = p.dst_conn;
    r.token = token;
    r.plane = m.plane;
    r.udp_sport = m.udp_sport;
    replies.push(r);
    (void)now;
}

void endpoint::impl::on_close_ack(connection& c, const wire::packet_view& p)
{
    if (c.state != conn_state::closing) {
        return;
    }
    if (p.close->src_conn.host() != c.peer_conn || p.close->token.host() != uint32_t(c.nonce)) {
        ++stats.rx_bad_token;
        return;
    }
    c.state = conn_state::closed;
    push_event(conn_event::kind::closed, c);
    free_conn(c);
}

// Control retries before the interval starts doubling and the route changing (spec 7.3).
constexpr uint32_t k_flat_retries = 3;

bool endpoint::impl::produce_ctrl(connection& c, uint64_t now, tx_frame& f) noexcept
{
    if (!c.hello_pending && !c.close_pending) {
        return false;
    }
    const bool hello = c.hello_pending;
    const uint32_t copy = hello ? c.hello_copy : 0; // 0: the original
    if (hello) {
        c.hello_copy = uint8_t(copy + 1 < cfg.transport.hello_copies ? copy + 1 : 0);
        c.hello_pending = c.hello_copy != 0; // the copies go in the next calls
    }
    uint16_t sport = c.ptx.empty() ? path_entropy(c, 0, 0) : c.ptx[0].udp_sport;
    uint8_t plane = c.ptx.empty() ? 0 : c.ptx[0].plane;
    if (c.incoming && hello) {
        // ACCEPT goes back on the route of the CONNECT it answers, one that just worked.
        plane = c.hello_plane;
        sport = c.hello_sport;
    } else if (c.ctrl_route > k_flat_retries) {
        // Past the first few resends, which random loss explains, each takes the next
        // plane and a new port (spec 7.3): a set-up must not keep retrying on a route or
        // plane that loses everything it carries.
        const uint32_t n = c.ctrl_route - k_flat_retries;
        plane = pick_plane(c, uint8_t((plane + n) % std::max<uint32_t>(c.planes, 1)), false);
        sport = path_entropy(c, 0, n);
    }
    if (copy != 0) {
        // A copy goes on the next plane and another port (spec 7.3): one loss, or one
        // lossy link, does not cost the set-up a retry interval.
        plane = pick_plane(c, uint8_t((plane + copy) % std::max<uint32_t>(c.planes, 1)), false);
        sport = path_entropy(c, copy, c.ctrl_route);
        ++stats.tx_hello_copies;
    }
    // A copy is the same packet, timestamp included: the answer to either times the try.
    wire::bth_fields b = bth_for(c, wire::opcode::connect, 0, plane, copy == 0 ? now : c.hello_sent_ns);
    if (hello) {
        if (copy == 0) {
            // CONNECT: its COOKIE or ACCEPT gives the handshake RTT; ACCEPT: the peer's
            // first data after it does.
            c.hello_sent_ns = now;
            if (c.hello_phase_new) {
                c.hello_phase_new = false;
                c.hello_first_ns = now;
                c.hello_phase_retries = c.ctrl_retries;
            }
        }
        b.op = c.incoming ? wire::opcode::accept : wire::opcode::connect;
        b.dst_conn = c.incoming ? c.peer_conn : 0;
        // An ACCEPT carries the share set aside for the peer (spec 6.4): its first
        // packets' timers then allow the queue the other senders' first packets make.
        const uint32_t hint = c.incoming ? rates.expected_share_mbps(slot_of(c.id)) : 0;
        f.len = wire::build_hello(f.buf, b, make_hello(c, cfg.transport, hint));
    } else {
        c.close_pending = false;
        b.op = wire::opcode::close;
        wire::close_header ch{};
        ch.src_conn = wire::be32_t::from_host(c.id);
        ch.token = wire::be32_t::from_host(uint32_t(c.nonce));
        f.len = wire::build_close(f.buf, b, ch);
    }
    fill_frame_route(c, plane, sport, f);
    return f.len > 0;
}

bool endpoint::impl::produce_reply(uint64_t now, tx_frame& f) noexcept
{
    if (replies.empty()) {
        return false;
    }
    const ctrl_reply r = replies.front();
    replies.pop();
    wire::bth_fields b;
    b.op = r.op;
    b.dst_conn = r.dst_conn;
    b.path = r.path;
    b.plane = r.plane;
    b.tx_ts = uint32_t(now);
    if (r.op == wire::opcode::probe_ack) {
        wire::probe_header ph{};
        ph.token = wire::be32_t::from_host(r.token);
        ph.ts_echo = wire::be32_t::from_host(r.ts_echo);
        f.len = wire::build_probe(f.buf, b, ph);
    } else if (r.op == wire::opcode::cookie) {
        wire::cookie_header ch{};
        ch.nonce = wire::be64_t::from_host(r.nonce);
        ch.cookie = wire::be64_t::from_host(r.cookie);
        ch.ts_echo = wire::be32_t::from_host(r.ts_echo);
        f.len = wire::build_cookie(f.buf, b, ch);
    } else {
        wire::close_header ch{};
        ch.src_conn = wire::be32_t::from_host(r.src_conn);
        ch.token = wire::be32_t::from_host(r.token);
        f.len = wire::build_close(f.buf, b, ch);
    }
    f.dst_addr = r.dst_addr;
    f.plane = r.plane;
    f.udp_sport = r.udp_sport;
    f.ect = true;
    return f.len > 0;
}


bool endpoint::impl::ctrl_timer(connection& c, uint64_t now) noexcept
{
    if (c.ctrl_deadline > now) {
        return true;
    }
    c.ctrl_deadline = k_no_deadline;
    refresh_deadlines(c);
    const transport_config& t = cfg.transport;
    if (c.state != conn_state::connecting && c.state != conn_state::closing) {
        return true;
    }
    if (++c.ctrl_retries > t.connect_retries) {
        if (c.state == conn_state::connecting) {
            enter_error(c, wc_status::retry_exc_err);
            return true;
        }
        c.state = conn_state::closed; // peer silent: give up politely
        push_event(conn_event::kind::closed, c);
        free_conn(c);
        return false;
    }
    if (c.state == conn_state::connecting) {
        queue_hello(c);
    } else {
        c.close_pending = true;
    }
    ++c.ctrl_route; // the resend takes the next route
    // The first retries at the base interval (a lossy fabric loses handshake packets too,
    // and a set-up waits on every one of them), then exponential backoff: patience for a
    // slow or absent peer.
    const uint32_t doublings = c.ctrl_retries > k_flat_retries ? c.ctrl_retries - k_flat_retries : 0;
    c.ctrl_deadline = now + (t.connect_retry_ns << std::min<uint32_t>(doublings, 6));
    refresh_deadlines(c);
    mark_ready(c);
    return true;
}

// Completes every outstanding work request: a request that already failed keeps its
// status, the rest get wr_flush_err (verbs semantics).
void endpoint::impl::flush(connection& c) noexcept
{
    // Per stream, in order: once a message did not land (or failed), later ones
    // flush too even if they were delivered, since their success would claim it had.
    for (uint32_t st = 0; st < c.stream_slots(); ++st) {
        const stream_state& ss = c.stream(st);
        bool broken = false;
        for (int32_t i = ss.head; i != k_nil; i = c.sq[i].next_in_stream) {
            send_slot& s = c.sq[i];
            if (!s.done || broken) {
                s.done = true;
                s.status = s.status == wc_status::success ? wc_status::wr_flush_err : s.status;
            }
            broken = broken || s.status != wc_status::success;
        }
    }
    for (uint16_t st = 0; st < c.stream_slots(); ++st) {
        try_complete(c, st);
    }
    flush_recvs(c);
    release_jobs(c);
    c.job_head = c.job_count = c.job_tx = 0;
    // Nothing is in flight any more: every path timer stops (a tail-loss probe left
    // armed here would fire for ever in a state that never clears it).
    for (path_tx& p : c.ptx) {
        if (p.blk != flights.sentinel()) {
            c.fl(p).rto_deadline = k_no_deadline;
            c.fl(p).tlp_deadline = k_no_deadline;
        }
        p.in_retx_list = false;
    }
    c.retx_paths.clear();
    release_records(c); // nothing reads them after a flush: no ACK or timer touches the paths
    c.sent_order.pop_to(logs, c.sent_order.tail);
    c.rnr_deadline = k_no_deadline;
    c.pace_wait = false;
    refresh_deadlines(c);
}

// Completes every posted receive with a flush status, in order, as far as the CQ has
// room; the rest follow from poll_cq (resume_cq_waiters), so none is lost.
void endpoint::impl::flush_recvs(connection& c) noexcept
{
    for (uint16_t st = 0; st < c.stream_slots(); ++st) {
        stream_state& ss = c.stream(st);
        while (ss.rq_consumed != ss.rq_posted) {
            const posted_recv& r = ss.rq[ss.rq_consumed % ss.rq_size];
            completion wc;
            wc.wr_id = r.wr_id;
            wc.conn = c.id;
            wc.stream = st;
            // The receive a failed SEND named says why; the others are flushed.
            const bool named = c.bad_recv_stream == int32_t(st) && c.bad_recv_seq == ss.rq_consumed;
            wc.status = named ? c.bad_recv_status : wc_status::wr_flush_err;
            wc.op = wc_opcode::recv;
            if (!push_cq(c, wc)) {
                return;
            }
            consume_recv(ss);
        }
    }
}

void endpoint::impl::enter_error(connection& c, wc_status first) noexcept
{
    if (c.state == conn_state::error) {
        return;
    }
    // The oldest unfinished request takes the specific status.
    for (uint32_t st = 0; st < c.stream_slots(); ++st) {
        const stream_state& ss = c.stream(st);
        if (ss.head != k_nil && !c.sq[ss.head].done && c.sq[ss.head].status == wc_status::success) {
            c.sq[ss.head].status = first;
            break;
        }
    }
    c.state = conn_state::error;
    c.hello_pending = false;
    c.ctrl_deadline = k_no_deadline;
    c.keepalive_next = k_no_deadline;
    c.linger_deadline = clock + cfg.transport.error_linger_ns;
    refresh_deadlines(c);
    ++stats.conn_errors;
    flush(c);
    push_event(conn_event::kind::error, c);
}

void endpoint::impl::free_conn(connection& c) noexcept
{
    const uint32_t idx = slot_of(c.id);
    release_records(c);
    if (c.peer_conn != k_no_conn) {
        const auto it = by_peer.find(peer_key(c.peer_addr, c.peer_conn));
        if (it != by_peer.end() && it->second == c.id) {
            by_peer.erase(it);
        }
    }
    if (c.cq_blocked) {
        // Its flush could not report every work request yet (the CQ is full): the
        // connection stays, CLOSED and silent, until poll_cq has made room for all of
        // them (spec 7.4: every outstanding request completes). resume_cq_waiters frees it.
        c.state = conn_state::closed;
        c.free_pending = true;
        c.ctrl_deadline = c.keepalive_next = c.linger_deadline = k_no_deadline;
        refresh_deadlines(c);
        c.hello_pending = c.close_pending = false;
        return;
    }
    std::erase(cq_waiters, c.id);
    rates.release(idx);
    release_lists(c);
    release_slots(c);
    release_jobs(c);
    conns[idx].reset();
    ++conns_freed;
    free_slots.push_back(idx);
}

} // namespace metaroce
