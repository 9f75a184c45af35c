// RoCEv2 model: QP table, connection setup, the transmit scheduler and timers.
#include "sim/rocev2/rnic.hpp"

#include <algorithm>
#include <cmath>

#include "sim/rng.hpp"

namespace metaroce::sim::rocev2 {

namespace {
constexpr uint16_t k_sport_base = 49152; // RoCEv2 source ports come from the dynamic range
} // namespace

rnic::rnic(const params& p) : p_(p), mrs_(p.max_mrs, p.seed ^ 0x5D0Eull) {}

rnic::qp* rnic::find(conn_id c) noexcept
{
    return c == k_no_conn || c > qps_.size() ? nullptr : qps_[c - 1].get();
}

const rnic::qp* rnic::find(conn_id c) const noexcept
{
    return c == k_no_conn || c > qps_.size() ? nullptr : qps_[c - 1].get();
}

uint16_t rnic::entropy(conn_id c) const noexcept
{
    // One fixed UDP source port per QP, as RoCEv2 NICs derive it from the QP number.
    const uint64_t h = splitmix64(p_.seed ^ (uint64_t(p_.local_addr) << 32) ^ c);
    return uint16_t(k_sport_base + h % (65536 - k_sport_base));
}

rnic::qp& rnic::make_qp(uint32_t peer, bool incoming, uint8_t plane)
{
    auto q = std::make_unique<qp>(p_.cc);
    q->id = conn_id(qps_.size() + 1);
    q->peer_addr = peer;
    q->incoming = incoming;
    q->plane = plane;
    q->sport = entropy(q->id);
    // Initial PSN: random, so PSN wrap is exercised like any other value.
    const auto psn = uint32_t(splitmix64(p_.seed * 31 + q->id));
    q->psn_end = q->snd_nxt = q->snd_una = q->snd_max = psn;
    qps_.push_back(std::move(q));
    return *qps_.back();
}

conn_id rnic::connect(uint32_t peer_addr, uint64_t now_ns)
{
    if (qps_.size() >= p_.max_qps) {
        return k_no_conn;
    }
    const auto plane = uint8_t(p_.spread_planes ? qps_.size() % p_.planes : 0);
    qp& q = make_qp(peer_addr, false, plane);
    uint8_t body[k_cm_body];
    put32(body, q.id);
    put32(body + 4, q.snd_nxt);
    queue_ctrl(q, op::cm_req, 0, body, k_cm_body);
    q.cm_at = now_ns + p_.cm_retry_ns;
    rearm(q);
    return q.id;
}

void rnic::queue_ctrl(const qp& q, op o, uint32_t psn, const uint8_t* body, uint32_t body_len)
{
    ctrl_pkt c;
    c.dst_addr = q.peer_addr;
    c.plane = q.plane;
    c.sport = q.sport;
    put_bth(c.bytes, bth{o, 0, q.peer_qp, psn});
    if (body != nullptr) {
        std::memcpy(c.bytes + k_bth, body, body_len);
    } // else: reserved bytes, already zero
    c.len = uint8_t(k_bth + body_len + k_icrc);
    ctrl_.push_back(c);
}

post_result rnic::post_send(conn_id c, const send_wr& wr, uint64_t now_ns)
{
    qp* q = find(c);
    if (q == nullptr) {
        return post_result::no_such_conn;
    }
    if (q->state == conn_state::error || q->state == conn_state::closed) {
        return post_result::conn_not_usable;
    }
    if (wr.op != wr_opcode::write) {
        return post_result::bad_stream; // only WRITE is modelled
    }
    if (q->sq.size() >= p_.max_wqes) {
        return post_result::queue_full;
    }
    uint8_t* src = nullptr;
    switch (mrs_.check_local(wr.local.lkey, wr.local.addr, wr.local.length, 0, &src)) {
    case mr_check::ok:
        break;
    case mr_check::out_of_bounds:
        return post_result::out_of_bounds;
    default:
        return post_result::bad_lkey;
    }
    wqe w;
    w.wr_id = wr.wr_id;
    w.src = src;
    w.len = wr.local.length;
    w.remote_va = wr.remote_va;
    w.rkey = wr.rkey;
    w.first_psn = q->psn_end;
    w.packets = std::max<uint32_t>(1, (w.len + p_.mtu - 1) / p_.mtu);
    w.signaled = wr.signaled;
    q->sq.push_back(w);
    q->psn_end += w.packets;
    if (q->state == conn_state::established) {
        if (q->rto_at == UINT64_MAX) {
            q->rto_at = now_ns + p_.rto_ns;
            rearm(*q);
        }
        schedule_tx(*q);
    }
    return post_result::ok;
}

size_t rnic::poll_cq(std::span<completion> out)
{
    size_t n = 0;
    while (n < out.size() && !cq_.empty()) {
        out[n++] = cq_.front();
        cq_.pop_front();
    }
    return n;
}

size_t rnic::poll_events(std::span<conn_event> out)
{
    size_t n = 0;
    while (n < out.size() && !events_.empty()) {
        out[n++] = events_.front();
        events_.pop_front();
    }
    return n;
}

void rnic::on_packet(const rx_meta& m, std::span<const uint8_t> b, uint64_t now_ns)
{
    last_seen_ns_ = std::max(last_seen_ns_, now_ns);
    ++stats_.rx_packets;
    stats_.rx_bytes += b.size();
    if (b.size() < k_bth + k_icrc) {
        ++stats_.rx_invalid;
        return;
    }
    const bth h = get_bth(b.data());
    if (h.opcode == op::cm_req || h.opcode == op::cm_rep) {
        on_cm(h, m, b, now_ns);
        return;
    }
    qp* q = find(h.dst_qp);
    if (q == nullptr || q->peer_addr != m.src_addr) {
        ++stats_.rx_unknown_conn;
        return;
    }
    if (q->state == conn_state::error) {
        return;
    }
    if (is_write(h.opcode)) {
        on_data(*q, h, m, b, now_ns);
    } else if (h.opcode == op::ack) {
        on_ack(*q, h, b, now_ns);
    } else if (h.opcode == op::cnp) {
        ++extra_.cnp_received;
        q->cc.on_cnp(now_ns);
        ++extra_.rate_cuts;
        rearm(*q);
    } else {
        ++stats_.rx_invalid;
    }
}

void rnic::on_cm(const bth& h, const rx_meta& m, std::span<const uint8_t> b, uint64_t now_ns)
{
    if (b.size() < k_cm_len) {
        ++stats_.rx_invalid;
        return;
    }
    const conn_id peer_qp = get32(b.data() + k_bth);
    const uint32_t peer_psn = get32(b.data() + k_bth + 4);
    if (h.opcode == op::cm_req) {
        const uint64_t key = (uint64_t(m.src_addr) << 32) | peer_qp;
        auto it = by_peer_.find(key);
        if (it == by_peer_.end()) {
            if (qps_.size() >= p_.max_qps) {
                return;
            }
            // The responder's QP answers on the plane the request came in on.
            qp& q = make_qp(m.src_addr, true, m.plane);
            q.peer_qp = peer_qp;
            q.epsn = peer_psn;
            q.state = conn_state::established;
            it = by_peer_.emplace(key, q.id).first;
            events_.push_back(conn_event{conn_event::kind::established, q.id, m.src_addr, true});
        }
        qp& q = *find(it->second);
        uint8_t body[k_cm_body];
        put32(body, q.id);
        put32(body + 4, q.snd_nxt);
        queue_ctrl(q, op::cm_rep, 0, body, k_cm_body); // repeated for a repeated REQ
        return;
    }
    qp* q = find(h.dst_qp);
    if (q == nullptr || q->incoming || q->state != conn_state::connecting) {
        return; // a late duplicate REP
    }
    q->peer_qp = peer_qp;
    q->epsn = peer_psn;
    q->state = conn_state::established;
    q->cm_at = UINT64_MAX;
    events_.push_back(conn_event{conn_event::kind::established, q->id, q->peer_addr, false});
    if (!q->sq.empty()) {
        q->rto_at = now_ns + p_.rto_ns;
        schedule_tx(*q);
    }
    rearm(*q);
}

void rnic::schedule_tx(qp& q)
{
    if (q.tx_queued || q.state != conn_state::established || q.snd_nxt == q.psn_end) {
        return;
    }
    q.tx_queued = true;
    tx_heap_.push(due{uint64_t(std::ceil(q.next_tx_ns)), q.id});
}

void rnic::rearm(qp& q)
{
    if (q.state == conn_state::error) {
        return; // a failed QP has no timers
    }
    const uint64_t at = std::min({q.rto_at, q.cm_at, q.cc.next_deadline()});
    if (at < q.timer_at || q.timer_at == UINT64_MAX) {
        q.timer_at = at;
        if (at != UINT64_MAX) {
            timer_heap_.push(due{at, q.id});
        }
    }
}

bool rnic::poll_tx(uint64_t now_ns, tx_frame& f)
{
    last_seen_ns_ = std::max(last_seen_ns_, now_ns);
    if (!ctrl_.empty()) {
        const ctrl_pkt& c = ctrl_.front();
        std::memcpy(f.buf.data(), c.bytes, c.len);
        f.len = c.len;
        f.dst_addr = c.dst_addr;
        f.plane = c.plane;
        f.udp_sport = c.sport;
        f.ect = true;
        ctrl_.pop_front();
        ++stats_.tx_packets;
        stats_.tx_bytes += f.len;
        return true;
    }
    while (!tx_heap_.empty() && tx_heap_.top().at <= now_ns) {
        const uint32_t id = tx_heap_.top().qp;
        tx_heap_.pop();
        qp& q = *find(id);
        q.tx_queued = false;
        if (build_data(q, now_ns, f)) {
            schedule_tx(q);
            return true;
        }
    }
    return false;
}

uint64_t rnic::next_timer() const noexcept
{
    uint64_t t = timer_heap_.empty() ? UINT64_MAX : timer_heap_.top().at;
    // A QP already due is waiting for the NIC (the driver polls after every event and
    // wakes itself when the NIC drains); only a pacing time still ahead needs a timer.
    if (!tx_heap_.empty() && tx_heap_.top().at > last_seen_ns_) {
        t = std::min(t, tx_heap_.top().at);
    }
    return t;
}

void rnic::on_timer(uint64_t now_ns)
{
    last_seen_ns_ = std::max(last_seen_ns_, now_ns);
    while (!timer_heap_.empty() && timer_heap_.top().at <= now_ns) {
        const due d = timer_heap_.top();
        timer_heap_.pop();
        qp& q = *find(d.qp);
        if (d.at != q.timer_at) {
            continue; // superseded
        }
        q.timer_at = UINT64_MAX;
        qp_timer(q, now_ns);
        rearm(q);
    }
}

void rnic::qp_timer(qp& q, uint64_t now_ns)
{
    if (q.state == conn_state::error) {
        return;
    }
    q.cc.on_timer(now_ns);
    if (q.cm_at <= now_ns) {
        uint8_t body[k_cm_body];
        put32(body, q.id);
        put32(body + 4, q.snd_nxt);
        queue_ctrl(q, op::cm_req, 0, body, k_cm_body);
        q.cm_at = now_ns + p_.cm_retry_ns;
    }
    if (q.rto_at <= now_ns) {
        if (q.snd_una == q.psn_end) {
            q.rto_at = UINT64_MAX;
            return;
        }
        ++stats_.timeouts;
        if (++q.retries > p_.retry_cnt) {
            fail(q, wc_status::retry_exc_err);
            return;
        }
        go_back(q, q.snd_una);
        q.rto_at = now_ns + p_.rto_ns;
    }
}

void rnic::fail(qp& q, wc_status why)
{
    q.state = conn_state::error;
    q.rto_at = q.cm_at = UINT64_MAX;
    ++stats_.conn_errors;
    bool first = true;
    for (const wqe& w : q.sq) {
        cq_.push_back(completion{w.wr_id, q.id, 0, first ? why : wc_status::wr_flush_err,
                                 wc_opcode::write, false, 0, 0});
        first = false;
    }
    q.sq.clear();
    events_.push_back(conn_event{conn_event::kind::error, q.id, q.peer_addr, q.incoming});
}

std::optional<conn_id> rnic::peer_conn(conn_id c) const
{
    const qp* q = find(c);
    if (q == nullptr) {
        return std::nullopt;
    }
    return q->peer_qp;
}

size_t rnic::state_bytes(conn_id c) const
{
    const qp* q = find(c);
    // The QP context plus its send queue at full depth (a NIC sizes it up front).
    return q == nullptr ? 0 : sizeof(qp) + size_t(p_.max_wqes) * sizeof(wqe);
}

double rnic::rate_gbps(conn_id c) const
{
    const qp* q = find(c);
    return q == nullptr ? 0 : q->cc.rate_gbps();
}

std::vector<std::pair<std::string, uint64_t>> rnic::extra_counters() const
{
    return {{"cnp_sent", extra_.cnp_sent},
            {"cnp_received", extra_.cnp_received},
            {"rate_cuts", extra_.rate_cuts},
            {"go_back_n", extra_.go_back_n},
            {"out_of_order_drops", extra_.out_of_order_drops}};
}

} // namespace metaroce::sim::rocev2
