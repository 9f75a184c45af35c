// Dispatch, scheduling, timers, completion and event queues of the engine.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "endpoint_impl.hpp"

namespace metaroce {

using namespace detail;

namespace {
constexpr uint32_t k_reply_queue = 1024;
constexpr uint32_t k_event_queue = 4096;
constexpr uint32_t k_wanted_queue = 256;

const endpoint_config& checked(const endpoint_config& c)
{
    if (const std::string why = validate(c); !why.empty()) {
        throw std::invalid_argument("invalid endpoint configuration: " + why);
    }
    return c;
}

} // namespace

endpoint::impl::impl(const endpoint_config& c)
    : cfg(checked(c)), mrs(c.max_mrs, c.seed, [](void* e) { static_cast<impl*>(e)->forget_mr_tags(); }, this), sges(c.sge_entries), records(c.record_chunks), flights(c.record_chunks), sacks(c.sack_blocks), acks(c.ack_blocks, true), stream_recs(c.stream_blocks),
      nak_rings(std::min<uint32_t>(c.max_connections, 0xfffe), true),
      send_slots(c.send_slot_chunks, true), recv_slots(c.recv_slot_chunks, true), logs(c.send_log_chunks, true),
      job_slots(c.read_job_chunks), cc(c.transport.cc),
      rates(c.inbound_capacity_mbps, c.hint_utilization, c.rate_epoch_ns,
            std::min<uint32_t>(c.max_connections, 0xfffe)),
      rng_state(c.seed ^ 0x6a09e667f3bcc909ull), conns(std::min<uint32_t>(c.max_connections, 0xfffe)), generation(conns.size(), 0),
      ready(conns.size() * 2), ack_ready(conns.size() * 2), replies(k_reply_queue), cq(c.cq_depth), events(k_event_queue), wanted(k_wanted_queue)
{
    free_slots.reserve(conns.size());
    for (uint32_t i = uint32_t(conns.size()); i > 0; --i) {
        free_slots.push_back(i - 1);
    }
    timers.reserve(conns.size() * 4);
    pool_waiters.reserve(conns.size());
    job_waiters.reserve(conns.size());
    plane_tab.resize(std::max<uint8_t>(c.transport.planes, 1));
    cookie_key[0] = random64();
    cookie_key[1] = random64();
    coverage_key.key = random64();
}

uint64_t endpoint::impl::random64() noexcept
{
    // splitmix64: deterministic for a given seed, good enough for ISNs and entropy.
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool endpoint::impl::push_cq(connection& c, const completion& wc) noexcept
{
    if (!cq.push(wc)) {
        if (!c.cq_blocked) {
            c.cq_blocked = true;
            cq_waiters.push_back(c.id);
        }
        return false;
    }
    ++stats.completions;
    return true;
}

void endpoint::impl::push_event(conn_event::kind k, const connection& c) noexcept
{
    conn_event e;
    e.what = k;
    e.conn = c.id;
    e.peer = c.peer_addr;
    e.incoming = c.incoming;
    events.push(e); // bounded; lifecycle events are rare
}

// The first `passed` chunks of p's directory (at most 16: una moved at most a window).
void endpoint::impl::return_chunks(connection& c, path_tx& p, uint32_t passed) noexcept
{
    bool gave = false;
    uint32_t h = c.fl(p).dir_head;
    for (uint32_t i = 0; i < passed && i < k_dir_slots; ++i) {
        uint16_t& d = c.fl(p).dir[h];
        if (d != record_pool::k_nil) {
            records.give(d);
            d = record_pool::k_nil;
            gave = true;
        }
        h = h + 1 == k_dir_slots ? 0 : h + 1;
    }
    c.fl(p).dir_head = uint8_t(passed < k_dir_slots ? h : (c.fl(p).dir_head + passed) % k_dir_slots);
    if (gave && !pool_waiters.empty()) {
        wake_pool_waiters();
    }
    (void)c;
}

void endpoint::impl::release_records(connection& c) noexcept
{
    bool gave = false;
    for (path_tx& p : c.ptx) {
        if (p.blk == flights.sentinel()) {
            continue; // settled: holds nothing
        }
        for (uint16_t& d : c.fl(p).dir) {
            if (d != record_pool::k_nil) {
                records.give(d);
                gave = true;
            }
        }
        drop_block(c, p);
    }
    if (c.pool_waiting) {
        c.pool_waiting = false;
        std::erase(pool_waiters, slot_of(c.id));
    }
    if (gave && !pool_waiters.empty()) {
        wake_pool_waiters();
    }
}

// Teardown: every slot and log chunk goes back, whatever its messages' state.
void endpoint::impl::release_slots(connection& c) noexcept
{
    for (uint16_t& d : c.sq.dir) {
        if (d != send_slots.sentinel()) {
            send_slots.give(d);
            d = send_slots.sentinel();
        }
    }
    for (uint16_t& d : c.rslots.dir) {
        if (d != recv_slots.sentinel()) {
            recv_slots.give(d);
            d = recv_slots.sentinel();
        }
    }
    c.sent_order.pop_to(logs, c.sent_order.tail);
    for (path_rx& r : c.prx) {
        if (r.sack != sacks.sentinel()) {
            sacks.give(r.sack);
            r.sack = sacks.sentinel();
        }
        if (r.ack != acks.sentinel()) {
            give_ack(r, c.ack(r));
        }
    }
    c.naks.release(nak_rings);
    for (uint16_t& d : c.sdir) {
        if (d != stream_recs.sentinel()) {
            stream_recs.give(d);
            d = stream_recs.sentinel();
        }
    }
}

void endpoint::impl::wait_for_records(connection& c) noexcept
{
    if (!c.pool_waiting) {
        c.pool_waiting = true;
        pool_waiters.push_back(slot_of(c.id)); // reserved for every connection slot
        ++stats.record_pool_waits;
    }
}

void endpoint::impl::wake_pool_waiters() noexcept
{
    for (const uint32_t idx : pool_waiters) {
        connection* w = conns[idx].get();
        if (w != nullptr && w->pool_waiting) {
            w->pool_waiting = false;
            mark_ready(*w);
        }
    }
    pool_waiters.clear();
}

void endpoint::impl::resume_cq_waiters() noexcept
{
    while (!cq_waiters.empty() && !cq.full()) {
        const conn_id id = cq_waiters.back();
        cq_waiters.pop_back();
        connection* c = find(id);
        if (c == nullptr) {
            continue;
        }
        c->cq_blocked = false;
        for (uint16_t s = 0; s < c->stream_slots(); ++s) {
            try_complete(*c, s);
            if (c->state == conn_state::established) {
                try_commit(*c, s);
            }
        }
        if (c->state != conn_state::established && c->state != conn_state::connecting) {
            flush_recvs(*c); // receives a flush could not report while the CQ was full
        }
        if (c->free_pending && !c->cq_blocked) {
            free_conn(*c);
        }
    }
}


// Idle connections (spec 7.8): probe a quiet peer, fail a silent one, free a failed
// connection nobody closed. Returns false if the connection was freed.
bool endpoint::impl::liveness_timer(connection& c, uint64_t now) noexcept
{
    const transport_config& t = cfg.transport;
    if (c.linger_deadline <= now) {
        c.state = conn_state::closed;
        ++stats.conns_reaped;
        push_event(conn_event::kind::closed, c);
        free_conn(c);
        return false;
    }
    if (c.keepalive_next > now) {
        return true;
    }
    c.keepalive_next = k_no_deadline;
    refresh_deadlines(c);
    if (c.state != conn_state::established) {
        return true;
    }
    if (now - c.last_rx >= t.idle_timeout_ns) {
        ++stats.conns_expired;
        enter_error(c, wc_status::retry_exc_err);
        return true;
    }
    if (now - c.last_rx >= t.keepalive_ns && !c.ptx.empty()) {
        request_probe(c, c.rr_path % uint32_t(c.ptx.size()));
        ++stats.keepalives;
    }
    c.keepalive_next = now + t.keepalive_ns;
    refresh_deadlines(c);
    return true;
}

void endpoint::impl::conn_timer(connection& c, uint64_t now) noexcept
{
    if (!ctrl_timer(c, now) || !liveness_timer(c, now)) {
        return; // freed
    }
    if (c.ack_deadline <= now) {
        c.ack_deadline = k_no_deadline;
        flush_delayed_acks(c);
    }
    if (c.rnr_deadline <= now) {
        rnr_timer(c, now);
    }
    if (c.pace_wait && c.pace_next <= now) {
        c.pace_wait = false;
        mark_ready(c);
    }
    if (c.state == conn_state::established) {
        path_timeouts(c, now);
    }
    refresh_deadlines(c); // the handlers above cleared or moved some
    // The timer fired: tighten the bound to the path deadlines still set.
    c.path_deadline_lb = k_no_deadline;
    for (const path_tx& p : c.ptx) {
        c.path_deadline_lb = std::min({c.path_deadline_lb, c.fl(p).rto_deadline, c.fl(p).tlp_deadline});
    }
    c.path_deadline_lb = std::min(c.path_deadline_lb, c.rack_deadline);
    recompute_timer(c, now);
}

// ---- public API -------------------------------------------------------------

endpoint::endpoint(const endpoint_config& cfg) : impl_(std::make_unique<impl>(cfg)) {}
endpoint::~endpoint() = default;

const endpoint_config& endpoint::config() const noexcept { return impl_->cfg; }
mr_table& endpoint::memory() noexcept { return impl_->mrs; }
const counters& endpoint::stats() const noexcept { return impl_->stats; }

namespace {

template <typename Pool>
void add_pool(pool_usage& u, const Pool& p, size_t chunk_bytes) noexcept
{
    u.reserved_bytes += size_t(p.capacity()) * chunk_bytes;
    u.held_bytes += size_t(p.in_use()) * chunk_bytes;
    u.peak_bytes += size_t(p.peak()) * chunk_bytes;
}

} // namespace

pool_usage endpoint::pools() const noexcept
{
    const impl& e = *impl_;
    pool_usage u;
    add_pool(u, e.records, k_chunk_records * sizeof(pkt_record));
    add_pool(u, e.flights, sizeof(path_flight));
    add_pool(u, e.sacks, sizeof(sack_window::bitmap));
    add_pool(u, e.acks, sizeof(ack_block));
    add_pool(u, e.stream_recs, sizeof(stream_state));
    add_pool(u, e.nak_rings, nak_pool::chunk_bytes());
    add_pool(u, e.send_slots, e.send_slots.chunk_bytes());
    add_pool(u, e.recv_slots, e.recv_slots.chunk_bytes());
    add_pool(u, e.logs, e.logs.chunk_bytes());
    add_pool(u, e.job_slots, e.job_slots.chunk_bytes());
    return u;
}
void endpoint::clear_stats() noexcept { impl_->stats = counters{}; }

post_result endpoint::post_send(conn_id id, const send_wr& wr, uint64_t now_ns)
{
    impl_->clock = now_ns;
    connection* c = impl_->find(id);
    if (c == nullptr) {
        return post_result::no_such_conn;
    }
    return impl_->post_send(*c, wr, now_ns);
}

post_result endpoint::post_recv(conn_id id, uint16_t stream, const recv_wr& wr)
{
    connection* c = impl_->find(id);
    if (c == nullptr) {
        return post_result::no_such_conn;
    }
    return impl_->post_recv(*c, stream, wr);
}

uint32_t endpoint::withdraw_recvs(conn_id id, uint16_t stream) noexcept
{
    connection* c = impl_->find(id);
    if (c == nullptr || stream >= c->streams_n) {
        return 0;
    }
    return impl_->withdraw_recvs(*c, stream);
}

uint32_t endpoint::orphan_sends(conn_id id, uint16_t stream)
{
    connection* c = impl_->find(id);
    if (c == nullptr || stream >= c->streams_n) {
        return 0;
    }
    return impl_->orphan_sends(*c, stream);
}

namespace {
template <typename T>
size_t drain(detail::fixed_ring<T>& ring, std::span<T> out) noexcept
{
    size_t n = 0;
    while (n < out.size() && !ring.empty()) {
        out[n++] = ring.front();
        ring.pop();
    }
    return n;
}
} // namespace

size_t endpoint::poll_cq(std::span<completion> out)
{
    const size_t n = drain(impl_->cq, out);
    if (n > 0) {
        impl_->resume_cq_waiters();
    }
    return n;
}


size_t endpoint::poll_events(std::span<conn_event> out) { return drain(impl_->events, out); }

size_t endpoint::poll_recv_wanted(std::span<recv_wanted> out) { return drain(impl_->wanted, out); }


bool endpoint::acks_owed() const noexcept
{
    return !impl_->ack_ready.empty();
}

uint64_t endpoint::next_timer() const noexcept
{
    const uint64_t t = impl_->timers.empty() ? k_no_deadline : impl_->timers.front().deadline;
    return std::min(t, impl_->plane_probe_deadline);
}

void endpoint::on_timer(uint64_t now)
{
    impl& e = *impl_;
    e.clock = now;
    if (e.plane_probe_deadline <= now) {
        e.plane_probe_timer(now);
    }
    while (!e.timers.empty() && e.timers.front().deadline <= now) {
        std::pop_heap(e.timers.begin(), e.timers.end(), std::greater<>{});
        const timer_entry t = e.timers.back();
        e.timers.pop_back();
        connection* c = e.find(t.conn);
        if (c == nullptr || c->timer_deadline != t.deadline) {
            continue; // stale entry
        }
        c->timer_deadline = k_no_deadline;
        e.conn_timer(*c, now);
    }
}

conn_id endpoint::connect(uint32_t peer_addr, uint64_t now)
{
    impl& e = *impl_;
    e.clock = now;
    connection* c = e.create_conn(peer_addr, false);
    if (c == nullptr) {
        return k_no_conn;
    }
    // The nonce also depends on the time, so a node that restarts with the same seed
    // (and so the same connection id) still makes an attempt its peer can tell apart.
    c->nonce ^= now * 0x9e3779b97f4a7c15ull;
    queue_hello(*c);
    c->ctrl_deadline = now + e.cfg.transport.connect_retry_ns;
    refresh_deadlines(*c);
    e.mark_ready(*c);
    e.recompute_timer(*c, now);
    return c->id;
}

void endpoint::close(conn_id id, uint64_t now)
{
    impl& e = *impl_;
    e.clock = now;
    connection* c = e.find(id);
    if (c == nullptr || c->free_pending) {
        return; // gone, or closed and only waiting to report its flush
    }
    if (c->state == conn_state::connecting || c->state == conn_state::closed) {
        c->state = conn_state::closed;
        e.flush(*c);
        e.push_event(conn_event::kind::closed, *c);
        e.free_conn(*c);
        return;
    }
    if (c->state == conn_state::closing) {
        return;
    }
    e.flush(*c);
    c->state = conn_state::closing;
    c->close_pending = true;
    c->ctrl_retries = 0;
    c->ctrl_deadline = now + e.cfg.transport.connect_retry_ns;
    refresh_deadlines(*c);
    e.mark_ready(*c);
    e.recompute_timer(*c, now);
}

std::vector<conn_id> endpoint::connections() const
{
    std::vector<conn_id> ids;
    for (const auto& c : impl_->conns) {
        if (c) {
            ids.push_back(c->id);
        }
    }
    return ids;
}

namespace {

// Pool chunks a directory names (the others name the sentinel).
size_t held(const std::vector<uint16_t>& dir, uint16_t sentinel) noexcept
{
    return size_t(std::count_if(dir.begin(), dir.end(), [&](uint16_t d) { return d != sentinel; }));
}

// What a connection holds right now: its own structures and the pool chunks of its
// messages and packets in flight (an idle connection holds none).
size_t state_bytes(const connection& c, uint16_t blk_nil, uint16_t sack_nil, uint16_t ack_nil, uint16_t send_nil,
                   uint16_t recv_nil, uint16_t job_nil, uint16_t stream_nil) noexcept
{
    size_t chunks = 0;
    size_t busy = 0;
    for (const path_tx& p : c.ptx) {
        chunks += size_t(std::count_if(std::begin(c.fl(p).dir), std::end(c.fl(p).dir),
                                       [](uint16_t d) { return d != record_pool::k_nil; }));
        busy += p.blk != blk_nil;
    }
    size_t bytes = sizeof(connection) + chunks * k_chunk_records * sizeof(pkt_record) + busy * sizeof(path_flight);
    bytes += c.ptx.size() * sizeof(path_tx) + c.prx.size() * sizeof(path_rx);
    bytes += size_t(std::count_if(c.prx.begin(), c.prx.end(), [&](const path_rx& r) { return r.sack != sack_nil; })) *
             sizeof(sack_window::bitmap);
    bytes += size_t(std::count_if(c.prx.begin(), c.prx.end(), [&](const path_rx& r) { return r.ack != ack_nil; })) *
             sizeof(ack_block);
    bytes += held(c.sq.dir, send_nil) * k_slots_per_chunk * sizeof(send_slot) +
             held(c.rslots.dir, recv_nil) * k_slots_per_chunk * sizeof(recv_slot);
    bytes += (c.sq.dir.capacity() + c.rslots.dir.capacity()) * sizeof(uint16_t);
    bytes += held(c.jobs.dir, job_nil) * k_slots_per_chunk * sizeof(read_job) + c.jobs.dir.capacity() * sizeof(uint16_t);
    bytes += c.naks.empty() ? 0 : nak_pool::chunk_bytes();
    bytes += c.sent_order.chunks() * log_pool::chunk_bytes();
    bytes += c.plane_rtts.capacity() * sizeof(plane_rtt);
    bytes += c.orphans.capacity() * sizeof(orphan_copy);
    for (const orphan_copy& o : c.orphans) {
        bytes += o.len;
    }
    bytes += c.sdir.capacity() * sizeof(uint16_t) + c.rqs.capacity() * sizeof(c.rqs[0]);
    for (uint32_t s = 0; s < c.stream_slots(); ++s) {
        if (c.sdir[s] != stream_nil) {
            bytes += sizeof(stream_state) + c.stream(s).rq_size * sizeof(posted_recv);
        }
    }
    return bytes;
}

} // namespace

std::optional<conn_info> endpoint::inspect(conn_id id) const
{
    const connection* c = impl_->find(id);
    if (c == nullptr) {
        return std::nullopt;
    }
    conn_info ci;
    ci.id = c->id;
    ci.peer_conn = c->peer_conn;
    ci.peer_addr = c->peer_addr;
    ci.state = c->state;
    ci.incoming = c->incoming;
    ci.paths = c->paths;
    ci.mtu = c->mtu;
    ci.streams = c->streams_n;
    ci.conn_cwnd = effective_cwnd(c->cc);
    ci.rate_hint_mbps = c->cc.rate_hint_mbps;
    ci.rate_hint_sent_mbps = impl_->rates.hint_mbps(slot_of(c->id));
    ci.inflight = c->inflight;
    ci.outstanding_msgs = c->outstanding;
    ci.tx_msgs_completed = c->tx_msgs_completed;
    ci.rx_msgs_committed = c->rx_msgs_committed;
    ci.state_bytes = state_bytes(*c, impl_->flights.sentinel(), impl_->sacks.sentinel(), impl_->acks.sentinel(), impl_->send_slots.sentinel(), impl_->recv_slots.sentinel(),
                                 impl_->job_slots.sentinel(), impl_->stream_recs.sentinel());
    for (uint32_t i = 0; i < c->ptx.size(); ++i) {
        const path_tx& p = c->ptx[i];
        path_info pi;
        pi.index = uint8_t(i);
        pi.plane = p.plane;
        pi.udp_sport = p.udp_sport;
        pi.state = p.state;
        pi.home_plane = p.home_plane;
        // A settled path shows its summary (and no counts: they went to the connection's).
        const path_flight& f = c->fl(p);
        const bool parked = p.blk == impl_->flights.sentinel();
        pi.cwnd = parked ? unpack_cwnd(p.cwnd_q) : f.cc.cwnd;
        pi.inflight = f.inflight;
        pi.next_psn = p.next_psn;
        pi.una = p.una;
        pi.rx_expected = i < c->prx.size() ? c->prx[i].expected : 0;
        pi.srtt_ns = parked ? unpack16(p.srtt_q) : f.srtt_ns;
        pi.rto_ns = parked ? 0 : f.rto_ns;
        pi.timeouts = f.timeouts;
        pi.tx_packets = f.tx_packets;
        pi.retransmits = f.retransmits;
        pi.acked_ce = f.acked_ce;
        pi.acked_rx = f.acked_rx;
        ci.path.push_back(pi);
    }
    return ci;
}

} // namespace metaroce
