// QPs onto metaroce connections (doc/spec.md section 12): one connection per pair of
// nodes, the lower address initiates; each QP receives on a stream it picks and tells
// the peer with a BIND control message on stream 0.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "verbs/context.hpp"

namespace metaroce::verbs {
namespace {

constexpr uint32_t k_ctl_slot = 32;
constexpr uint32_t k_ctl_recvs = 16;    // control receives kept posted per connection
constexpr uint32_t k_bind_magic = 0x4d525642; // "MRVB"
constexpr uint8_t k_bind_version = 1;
constexpr uint8_t k_type_bind = 1;
constexpr size_t k_bind_len = 16;
constexpr uint64_t k_early_bind_ttl_ns = 30'000'000'000ull;

uint8_t* slot_ptr(vcontext& c, uint32_t slot) { return c.ctl_mem.data() + size_t(slot) * k_ctl_slot; }

sge slot_sge(vcontext& c, uint32_t slot, uint32_t len)
{
    return sge{reinterpret_cast<uintptr_t>(slot_ptr(c, slot)), len, c.ctl_lkey};
}

bool post_ctl_recv(vcontext& c, conn_id id, uint32_t slot)
{
    recv_wr w;
    w.wr_id = make_wr_id(0, slot);
    w.local = slot_sge(c, slot, k_ctl_slot);
    return c.node->ep().post_recv(id, 0, w) == post_result::ok;
}

// Sends one BIND; false if it must wait (no slot, or the core's queue is full).
bool send_bind(vcontext& c, const bind_msg& m, uint64_t now)
{
    if (c.ctl_free_tx.empty()) {
        return false;
    }
    const uint32_t slot = c.ctl_free_tx.back();
    uint8_t* p = slot_ptr(c, slot);
    const uint32_t magic = htonl(k_bind_magic);
    const uint16_t stream = htons(m.stream);
    const uint32_t src = htonl(m.src_qpn);
    const uint32_t dst = htonl(m.dst_qpn);
    std::memcpy(p, &magic, 4);
    p[4] = k_bind_version;
    p[5] = k_type_bind;
    std::memcpy(p + 6, &stream, 2);
    std::memcpy(p + 8, &src, 4);
    std::memcpy(p + 12, &dst, 4);
    send_wr w;
    w.wr_id = make_wr_id(0, slot);
    w.op = wr_opcode::send;
    w.stream = 0;
    w.local = slot_sge(c, slot, k_bind_len);
    const post_result r = c.node->ep().post_send(m.conn, w, now);
    if (r == post_result::queue_full) {
        return false;
    }
    c.ctl_free_tx.pop_back();
    if (r != post_result::ok) {
        c.ctl_free_tx.push_back(slot); // the connection is gone; its QPs fail with it
    }
    return true;
}

void apply_bind(vcontext& c, vqp& q, uint16_t stream)
{
    q.tx_stream = stream;
    logf(c, "QP %u bound to QP %u of %s: conn %08x, sends on stream %u, receives on %u",
         q.ex.qp_base.qp_num, q.dest_qpn, format_ipv4(q.peer).c_str(), q.conn, q.tx_stream,
         q.rx_stream);
    mark_dirty(c, q);
}

bool wants_outgoing(const vcontext& c, const vqp& q)
{
    // Towards itself a node holds two connections (the one it initiated and the one it
    // accepted); the QP with the lower number of a pair uses the initiated one.
    return q.peer == c.addr ? q.ex.qp_base.qp_num < q.dest_qpn : c.addr < q.peer;
}

conn_id candidate(const vcontext& c, const vqp& q)
{
    const auto& m = wants_outgoing(c, q) ? c.out_conn : c.in_conn;
    const auto it = m.find(q.peer);
    return it == m.end() ? k_no_conn : it->second;
}

void attach(vcontext& c, vqp& q, conn_id id, uint64_t now)
{
    conn_rec& r = c.conns[id];
    uint16_t s = 1;
    while (s < r.rx_used.size() && r.rx_used[s]) {
        ++s;
    }
    if (s >= r.rx_used.size()) {
        logf(c, "QP %u: no free stream towards %s (METAROCE_MAX_STREAMS=%u)",
             q.ex.qp_base.qp_num, format_ipv4(q.peer).c_str(), c.st.max_streams);
        q.waiting = false;
        qp_error(c, q, IBV_WC_RETRY_EXC_ERR, true);
        return;
    }
    r.rx_used[s] = 1;
    q.conn = id;
    q.rx_stream = s;
    q.waiting = false;
    q.clean_stream = true;
    submit(c, q, now); // receives first, so the peer's first message finds one
    const bind_msg m{id, q.ex.qp_base.qp_num, q.dest_qpn, s, now};
    if (!send_bind(c, m, now)) {
        c.ctl_backlog.push_back(m);
    }
    for (auto it = c.early_binds.begin(); it != c.early_binds.end(); ++it) {
        if (it->conn == id && it->src_qpn == q.dest_qpn && it->dst_qpn == q.ex.qp_base.qp_num) {
            apply_bind(c, q, it->stream);
            c.early_binds.erase(it);
            break;
        }
    }
}

void try_attach(vcontext& c, vqp& q, uint64_t now)
{
    const conn_id id = candidate(c, q);
    if (id == k_no_conn) {
        return;
    }
    const auto it = c.conns.find(id);
    if (it != c.conns.end() && it->second.established) {
        attach(c, q, id, now);
    }
}

void on_bind(vcontext& c, conn_id id, const uint8_t* p, uint32_t len, uint64_t now)
{
    uint32_t magic;
    uint16_t stream;
    uint32_t src;
    uint32_t dst;
    if (len < k_bind_len) {
        return;
    }
    std::memcpy(&magic, p, 4);
    std::memcpy(&stream, p + 6, 2);
    std::memcpy(&src, p + 8, 4);
    std::memcpy(&dst, p + 12, 4);
    if (ntohl(magic) != k_bind_magic || p[4] != k_bind_version || p[5] != k_type_bind) {
        return; // spec 12.3: unknown control messages are ignored
    }
    const bind_msg m{id, ntohl(src), ntohl(dst), ntohs(stream), now};
    const auto it = c.qps.find(m.dst_qpn);
    if (it != c.qps.end()) {
        vqp& q = *it->second;
        if (q.conn == id && q.dest_qpn == m.src_qpn && q.tx_stream == 0) {
            apply_bind(c, q, m.stream);
            return;
        }
    }
    logf(c, "BIND of QP %u to QP %u (conn %08x) kept until that QP attaches", m.src_qpn,
         m.dst_qpn, id);
    c.early_binds.push_back(m);
}

} // namespace

void qp_connect(vcontext& c, vqp& q, uint64_t now)
{
    q.waiting = true;
    restart_wait(q, now);
    if (wants_outgoing(c, q) && c.out_conn.find(q.peer) == c.out_conn.end()) {
        const conn_id id = c.node->ep().connect(q.peer, now);
        if (id == k_no_conn) {
            q.waiting = false;
            qp_error(c, q, IBV_WC_RETRY_EXC_ERR, true);
            return;
        }
        c.conns[id] = conn_rec{q.peer, false, false, {}, {}};
        c.out_conn[q.peer] = id;
        logf(c, "connecting to %s (conn %08x)", format_ipv4(q.peer).c_str(), id);
        wake(c);
    }
    try_attach(c, q, now);
}

void qp_detach(vcontext& c, vqp& q)
{
    release_core_work(c, q);
    if (q.conn != k_no_conn) {
        const auto it = c.conns.find(q.conn);
        if (it != c.conns.end() && q.rx_stream < it->second.rx_used.size() &&
            q.clean_stream && q.rq.sub == q.rq.head) {
            it->second.rx_used[q.rx_stream] = 0; // nothing of ours left on it: reusable
        }
    }
    q.conn = k_no_conn;
    q.rx_stream = 0;
    q.tx_stream = 0;
    q.waiting = false;
    c.dirty.erase(std::remove(c.dirty.begin(), c.dirty.end(), &q), c.dirty.end());
    c.blocked.erase(std::remove(c.blocked.begin(), c.blocked.end(), &q), c.blocked.end());
    const uint32_t qpn = q.ex.qp_base.qp_num;
    c.early_binds.erase(std::remove_if(c.early_binds.begin(), c.early_binds.end(),
                                       [&](const bind_msg& m) { return m.dst_qpn == qpn; }),
                        c.early_binds.end());
}

void on_conn_event(vcontext& c, const conn_event& e, uint64_t now)
{
    if (e.what == conn_event::kind::established) {
        conn_rec& r = c.conns[e.conn];
        r.peer = e.peer;
        r.incoming = e.incoming;
        r.established = true;
        r.rx_used.assign(c.st.max_streams, 0);
        r.rx_used[0] = 1;
        if (e.incoming) {
            c.in_conn[e.peer] = e.conn;
        }
        for (uint32_t i = 0; i < k_ctl_recvs && !c.ctl_free_tx.empty(); ++i) {
            const uint32_t slot = c.ctl_free_tx.back();
            if (!post_ctl_recv(c, e.conn, slot)) {
                break;
            }
            c.ctl_free_tx.pop_back();
            r.ctl_slots.push_back(slot);
        }
        logf(c, "connection %08x %s %s established", e.conn, e.incoming ? "from" : "to",
             format_ipv4(e.peer).c_str());
        for (const auto& [qpn, q] : c.qps) {
            if (q->waiting && q->peer == e.peer) {
                try_attach(c, *q, now);
            }
        }
        return;
    }
    const auto it = c.conns.find(e.conn);
    if (it == c.conns.end()) {
        return;
    }
    logf(c, "connection %08x with %s %s", e.conn, format_ipv4(it->second.peer).c_str(),
         e.what == conn_event::kind::error ? "failed" : "closed");
    // Its control receives come back flushed; their slots return then.
    const uint32_t peer = it->second.peer;
    for (auto* m : {&c.out_conn, &c.in_conn}) {
        const auto f = m->find(peer);
        if (f != m->end() && f->second == e.conn) {
            m->erase(f);
        }
    }
    for (const auto& [qpn, q] : c.qps) {
        const bool on_it = q->conn == e.conn;
        const bool waiting_for_it = q->waiting && q->peer == peer &&
                                    (wants_outgoing(c, *q) == !it->second.incoming);
        if (on_it || waiting_for_it) {
            q->waiting = false;
            if (q->ex.qp_base.state != IBV_QPS_ERR && q->ex.qp_base.state != IBV_QPS_RESET) {
                qp_error(c, *q, IBV_WC_RETRY_EXC_ERR, true);
            }
            q->conn = k_no_conn;
        }
    }
    c.conns.erase(it);
    if (e.what == conn_event::kind::error) {
        c.node->ep().close(e.conn, now);
    }
}

void on_ctl_completion(vcontext& c, const completion& wc, uint64_t now)
{
    const uint32_t slot = uint32_t(wc.wr_id & ((1ull << 40) - 1));
    const bool is_recv = wc.op == wc_opcode::recv || wc.op == wc_opcode::recv_rdma_with_imm;
    if (!is_recv) {
        c.ctl_free_tx.push_back(slot);
        return;
    }
    const auto it = c.conns.find(wc.conn);
    if (wc.status == wc_status::success && it != c.conns.end()) {
        on_bind(c, wc.conn, slot_ptr(c, slot), wc.byte_len, now);
        if (post_ctl_recv(c, wc.conn, slot)) {
            return;
        }
    }
    if (it != c.conns.end()) {
        auto& v = it->second.ctl_slots;
        v.erase(std::remove(v.begin(), v.end(), slot), v.end());
    }
    c.ctl_free_tx.push_back(slot);
}

void flush_ctl_backlog(vcontext& c, uint64_t now)
{
    while (!c.ctl_backlog.empty()) {
        const bind_msg m = c.ctl_backlog.front();
        if (c.conns.find(m.conn) != c.conns.end() && !send_bind(c, m, now)) {
            return;
        }
        c.ctl_backlog.erase(c.ctl_backlog.begin());
    }
}

void check_waiting(vcontext& c, uint64_t now)
{
    for (const auto& [qpn, qp] : c.qps) {
        vqp& q = *qp;
        const bool unbound = q.waiting || (q.conn != k_no_conn && q.tx_stream == 0);
        if (!unbound || q.sq.sub == q.sq.tail || q.attr.timeout == 0) {
            continue;
        }
        // Sends wait for a connection or a BIND: after the QP's own transport budget
        // (timeout * (retry_cnt + 1), at least 100 ms) they fail. The budget is counted
        // in periods of the timeout, as an RC requester counts its retries, not as
        // elapsed time: a process (or VM) that was not scheduled for a while counts one
        // period for the stop, however long, and the peer gets the rest to answer.
        const uint64_t retries = uint64_t(q.attr.retry_cnt) + 1;
        const uint64_t t = std::max<uint64_t>(uint64_t(4096) << q.attr.timeout, 100'000'000 / retries);
        if (q.wait_next_ns == 0) {
            q.wait_next_ns = q.wait_since_ns + t;
        }
        if (now < q.wait_next_ns) {
            continue;
        }
        q.wait_next_ns = now + t;
        if (++q.wait_periods < retries) {
            continue;
        }
        logf(c, "QP %u: peer %s QP %u did not answer in %llu ms (%u periods of %llu ms)", qpn,
             format_ipv4(q.peer).c_str(), q.dest_qpn,
             (unsigned long long)((now - q.wait_since_ns) / 1'000'000), unsigned(q.wait_periods),
             (unsigned long long)(t / 1'000'000));
        q.waiting = false;
        qp_error(c, q, IBV_WC_RETRY_EXC_ERR, true);
    }
    while (!c.early_binds.empty() && now - c.early_binds.front().at_ns > k_early_bind_ttl_ns) {
        c.early_binds.erase(c.early_binds.begin());
    }
}

} // namespace metaroce::verbs
