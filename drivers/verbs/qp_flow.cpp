// Work requests between a QP's rings and the core: submission in posting order,
// completions mapped back (unsignaled sends complete silently as a later completion
// of the same stream passes them), error state with flush completions.
#include <unistd.h>

#include <algorithm>
#include <string>

#include "verbs/context.hpp"

namespace metaroce::verbs {
namespace {

constexpr uint64_t k_seq_mask = (1ull << 40) - 1;

ibv_wc_status to_ibv(wc_status s) noexcept
{
    switch (s) {
    case wc_status::success: return IBV_WC_SUCCESS;
    case wc_status::loc_len_err: return IBV_WC_LOC_LEN_ERR;
    case wc_status::loc_prot_err: return IBV_WC_LOC_PROT_ERR;
    case wc_status::wr_flush_err: return IBV_WC_WR_FLUSH_ERR;
    case wc_status::rem_access_err: return IBV_WC_REM_ACCESS_ERR;
    case wc_status::rem_inv_req_err: return IBV_WC_REM_INV_REQ_ERR;
    case wc_status::rnr_retry_exc_err: return IBV_WC_RNR_RETRY_EXC_ERR;
    case wc_status::retry_exc_err: return IBV_WC_RETRY_EXC_ERR;
    case wc_status::rem_op_err: return IBV_WC_REM_OP_ERR;
    }
    return IBV_WC_GENERAL_ERR;
}

ibv_wc_status post_failure(post_result r) noexcept
{
    switch (r) {
    case post_result::too_long: return IBV_WC_LOC_LEN_ERR;
    case post_result::bad_lkey:
    case post_result::bad_access:
    case post_result::out_of_bounds: return IBV_WC_LOC_PROT_ERR;
    case post_result::conn_not_usable:
    case post_result::no_such_conn: return IBV_WC_RETRY_EXC_ERR;
    default: return IBV_WC_LOC_QP_OP_ERR;
    }
}

wr_opcode to_core(ibv_wr_opcode op) noexcept
{
    switch (op) {
    case IBV_WR_RDMA_WRITE: return wr_opcode::write;
    case IBV_WR_RDMA_WRITE_WITH_IMM: return wr_opcode::write_imm;
    case IBV_WR_SEND_WITH_IMM: return wr_opcode::send_imm;
    case IBV_WR_RDMA_READ: return wr_opcode::read;
    default: return wr_opcode::send;
    }
}

ibv_wc_opcode send_wc_opcode(ibv_wr_opcode op) noexcept
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    default: return IBV_WC_SEND;
    }
}

bool signaled(const vqp& q, const send_rec& r) noexcept
{
    return q.sig_all || (r.flags & IBV_SEND_SIGNALED) != 0;
}

ibv_wc base_wc(const vqp& q, uint64_t wr_id, ibv_wc_status st)
{
    ibv_wc wc{};
    wc.wr_id = wr_id;
    wc.status = st;
    wc.qp_num = q.ex.qp_base.qp_num;
    wc.src_qp = q.dest_qpn;
    wc.vendor_err = st == IBV_WC_SUCCESS ? 0 : 0x4d52;
    return wc;
}

vcq& cq_of(ibv_cq* cq) { return *reinterpret_cast<vcq*>(cq); }

void emit_send(vqp& q, const send_rec& r, ibv_wc_status st)
{
    ibv_wc wc = base_wc(q, r.wr_id, st);
    wc.opcode = send_wc_opcode(r.op);
    wc.byte_len = r.length;
    emit(cq_of(q.ex.qp_base.send_cq), wc);
}

void emit_recv_flush(vqp& q, const recv_rec& r)
{
    ibv_wc wc = base_wc(q, r.wr_id, IBV_WC_WR_FLUSH_ERR);
    wc.opcode = IBV_WC_RECV;
    emit(cq_of(q.ex.qp_base.recv_cq), wc);
}

// Full sequence of a core completion in `ring`, or false if it is no longer tracked
// (flushed by an error or a reset before the core reported it).
bool locate(const seq_ring& ring, uint64_t wr_id, uint64_t& seq)
{
    const uint64_t diff = ((wr_id & k_seq_mask) - (ring.head & k_seq_mask)) & k_seq_mask;
    if (diff >= ring.sub - ring.head) {
        return false;
    }
    seq = ring.head + diff;
    return true;
}

void submit_recvs(vcontext& c, vqp& q)
{
    if (q.srq != nullptr) {
        srq_refill(c, q);
    }
    const uint32_t qpn = q.ex.qp_base.qp_num;
    while (q.rq.sub < q.rq.tail) {
        const uint32_t slot = q.rq.slot(q.rq.sub);
        const recv_rec& r = q.recvs[slot];
        recv_wr w;
        w.wr_id = make_wr_id(qpn, q.rq.sub);
        // As an HCA does, the lkeys are checked when a message lands, not now: the
        // receive may have waited here for the QP's binding while the program
        // reregistered its region (12.4), and the peer must see the failure (a NAK).
        w.check_at_use = true;
        const sge* s = &q.recv_sges[size_t(slot) * q.cap.max_recv_sge];
        if (r.num_sge == 0) {
            w.local = sge{reinterpret_cast<uintptr_t>(c.ctl_mem.data()), 0, c.ctl_lkey};
        } else if (r.num_sge == 1) {
            w.local = s[0];
        } else {
            w.sg_list = s;
            w.num_sge = r.num_sge;
        }
        const post_result res = c.node->ep().post_recv(q.conn, q.rx_stream, w);
        if (res == post_result::queue_full) {
            return; // a receive completion makes room
        }
        if (res != post_result::ok) {
            ibv_wc wc = base_wc(q, r.wr_id, IBV_WC_LOC_PROT_ERR);
            wc.opcode = IBV_WC_RECV;
            emit(cq_of(q.ex.qp_base.recv_cq), wc);
            ++q.rq.sub;
            q.rq.head = q.rq.sub;
            qp_error(c, q, IBV_WC_WR_FLUSH_ERR, false);
            return;
        }
        ++q.rq.sub;
        q.clean_stream = false;
    }
}

void submit_sends(vcontext& c, vqp& q, uint64_t now)
{
    const uint32_t qpn = q.ex.qp_base.qp_num;
    while (q.sq.sub < q.sq.tail) {
        const uint32_t slot = q.sq.slot(q.sq.sub);
        const send_rec& r = q.sends[slot];
        if ((r.flags & IBV_SEND_FENCE) && q.reads_inflight > 0) {
            return; // IBV_SEND_FENCE: after every earlier READ of this QP completed
        }
        send_wr w;
        w.wr_id = make_wr_id(qpn, q.sq.sub);
        w.op = to_core(r.op);
        w.stream = q.tx_stream;
        const sge* s = &q.send_sges[size_t(slot) * q.cap.max_send_sge];
        if (r.inlined) {
            w.local = sge{reinterpret_cast<uintptr_t>(&q.inline_area[size_t(slot) * q.cap.max_inline_data]),
                          r.length, q.inline_lkey};
        } else if (r.num_sge == 0) {
            w.local = sge{reinterpret_cast<uintptr_t>(c.ctl_mem.data()), 0, c.ctl_lkey};
        } else if (r.num_sge == 1) {
            w.local = s[0];
        } else {
            w.sg_list = s;
            w.num_sge = r.num_sge;
        }
        w.remote_va = r.remote_addr;
        w.rkey = r.rkey;
        w.imm = r.imm;
        w.solicited = (r.flags & IBV_SEND_SOLICITED) != 0;
        // READs always report to the front end: IBV_SEND_FENCE waits for them.
        w.signaled = signaled(q, r) || r.op == IBV_WR_RDMA_READ;
        const post_result res = c.node->ep().post_send(q.conn, w, now);
        if (res == post_result::queue_full) {
            // The window is the connection's: a completion of any QP makes room.
            if (std::find(c.blocked.begin(), c.blocked.end(), &q) == c.blocked.end()) {
                c.blocked.push_back(&q);
            }
            return;
        }
        if (res != post_result::ok) {
            emit_send(q, r, post_failure(res));
            ++q.sq.sub;
            q.sq.head = q.sq.sub;
            qp_error(c, q, IBV_WC_WR_FLUSH_ERR, false);
            return;
        }
        if (r.op == IBV_WR_RDMA_READ) {
            ++q.reads_inflight;
        }
        ++q.sq.sub;
    }
}

} // namespace

void emit(vcq& cq, const ibv_wc& wc, bool solicited)
{
    cq.q.push_back(wc);
    ibv_comp_channel* ch = cq.ex.channel;
    const bool wakes = !cq.solicited_only || solicited || wc.status != IBV_WC_SUCCESS;
    if (cq.armed && wakes && ch != nullptr) {
        cq.armed = false; // one-shot, as ibv_req_notify_cq specifies
        const ibv_cq* p = reinterpret_cast<ibv_cq*>(&cq.ex);
        [[maybe_unused]] ssize_t r = write(reinterpret_cast<vchannel*>(ch)->wfd, &p, sizeof p);
    }
}

void submit(vcontext& c, vqp& q, uint64_t now)
{
    const ibv_qp_state st = q.ex.qp_base.state;
    if (q.conn == k_no_conn || st == IBV_QPS_RESET || st == IBV_QPS_ERR) {
        return;
    }
    if (q.rx_stream != 0) {
        submit_recvs(c, q);
    }
    if (q.tx_stream != 0 && q.ex.qp_base.state == IBV_QPS_RTS) {
        submit_sends(c, q, now);
    }
}

void qp_error(vcontext& c, vqp& q, ibv_wc_status first, bool async_fatal)
{
    if (q.ex.qp_base.state == IBV_QPS_ERR) {
        return;
    }
    q.ex.qp_base.state = IBV_QPS_ERR;
    q.attr.qp_state = IBV_QPS_ERR;
    release_core_work(c, q);
    // What the core still holds completes later and is ignored (locate() fails).
    for (uint64_t s = q.sq.head; s < q.sq.tail; ++s) {
        emit_send(q, q.sends[q.sq.slot(s)], s == q.sq.head ? first : IBV_WC_WR_FLUSH_ERR);
    }
    q.sq.head = q.sq.sub = q.sq.tail;
    q.reads_inflight = 0;
    for (uint64_t s = q.rq.head; s < q.rq.tail; ++s) {
        emit_recv_flush(q, q.recvs[q.rq.slot(s)]);
    }
    q.rq.head = q.rq.sub = q.rq.tail;
    logf(c, "QP %u -> ERR (first status %d)", q.ex.qp_base.qp_num, int(first));
    if (async_fatal) {
        post_async(c, IBV_EVENT_QP_FATAL, &q.ex.qp_base);
    }
    if (q.srq != nullptr) {
        post_async(c, IBV_EVENT_QP_LAST_WQE_REACHED, &q.ex.qp_base);
    }
}

void on_qp_completion(vcontext& c, const completion& wc)
{
    const auto it = c.qps.find(uint32_t(wc.wr_id >> 40));
    if (it == c.qps.end()) {
        return;
    }
    vqp& q = *it->second;
    const bool is_recv = wc.op == wc_opcode::recv || wc.op == wc_opcode::recv_rdma_with_imm;
    uint64_t seq = 0;
    if (!locate(is_recv ? q.rq : q.sq, wc.wr_id, seq)) {
        return;
    }
    const ibv_wc_status st = to_ibv(wc.status);
    if (st != IBV_WC_SUCCESS) {
        logf(c, "QP %u: %s completion %s (wr seq %llu)", q.ex.qp_base.qp_num,
             is_recv ? "receive" : "send", std::string(to_string(wc.status)).c_str(),
             (unsigned long long)seq);
    }
    if (is_recv) {
        const recv_rec& r = q.recvs[q.rq.slot(seq)];
        ibv_wc out = base_wc(q, r.wr_id, st);
        out.opcode = wc.op == wc_opcode::recv ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM;
        out.byte_len = wc.byte_len;
        if (wc.has_imm) {
            out.wc_flags |= IBV_WC_WITH_IMM;
            out.imm_data = wc.imm;
        }
        emit(cq_of(q.ex.qp_base.recv_cq), out, wc.solicited);
        q.rq.head = seq + 1;
        if (q.rq.sub == q.rq.head) {
            q.clean_stream = true;
        }
        if (st != IBV_WC_SUCCESS) {
            qp_error(c, q, IBV_WC_WR_FLUSH_ERR, false);
        } else if (q.rq.sub < q.rq.tail || q.srq != nullptr) {
            mark_dirty(c, q);
        }
        return;
    }
    // Sends complete in stream order: everything before `seq` finished too.
    for (uint64_t s = q.sq.head; s <= seq; ++s) {
        if (q.sends[q.sq.slot(s)].op == IBV_WR_RDMA_READ && q.reads_inflight > 0) {
            --q.reads_inflight;
        }
    }
    const send_rec& r = q.sends[q.sq.slot(seq)];
    if (st != IBV_WC_SUCCESS || signaled(q, r)) {
        emit_send(q, r, st);
    }
    q.sq.head = seq + 1;
    if (st != IBV_WC_SUCCESS) {
        qp_error(c, q, IBV_WC_WR_FLUSH_ERR, false);
    } else if (q.sq.sub < q.sq.tail) {
        mark_dirty(c, q);
    }
}

void release_core_work(vcontext& c, vqp& q)
{
    if (q.conn != k_no_conn && q.rq.sub > q.rq.head) {
        // What the core holds for no message yet: a late SEND must not land in memory the
        // application takes back after destroying the QP (it meets RNR instead, spec 8.2).
        q.rq.sub -= c.node->ep().withdraw_recvs(q.conn, q.rx_stream);
        q.clean_stream = q.rq.sub == q.rq.head;
    }
    if (q.conn != k_no_conn && q.sq.sub > q.sq.head) {
        // Completed (flushed) or not, those sends are the application's to reclaim: the
        // core finishes them from its own copies, and a deregistered region cannot fail
        // the connection the peer's other QPs share.
        c.node->ep().orphan_sends(q.conn, q.tx_stream);
    }
    if (q.srq != nullptr) {
        srq_give_back(q); // an SRQ's receives outlive the QP
    }
}

void srq_give_back(vqp& q)
{
    for (uint64_t s = q.rq.tail; s > q.rq.sub; --s) {
        const uint32_t slot = q.rq.slot(s - 1);
        const sge* g = &q.recv_sges[size_t(slot) * q.cap.max_recv_sge];
        q.srq->pool.emplace_front(q.recvs[slot], std::vector<sge>(g, g + q.recvs[slot].num_sge));
    }
    q.rq.tail = q.rq.sub;
}

namespace {
// One receive from the SRQ's pool into q's ring (srq_refill's step, past its share).
void srq_take_one(vqp& q)
{
    vsrq& s = *q.srq;
    const uint32_t slot = q.rq.slot(q.rq.tail);
    auto& [rec, sges] = s.pool.front();
    q.recvs[slot] = rec;
    for (size_t i = 0; i < sges.size(); ++i) {
        q.recv_sges[size_t(slot) * q.cap.max_recv_sge + i] = sges[i];
    }
    s.pool.pop_front();
    ++q.rq.tail;
}
} // namespace

void on_recv_wanted(vcontext& c, const recv_wanted& w)
{
    vqp* q = nullptr;
    for (const auto& [qpn, o] : c.qps) {
        if (o->conn == w.conn && o->rx_stream == w.stream) {
            q = o;
            break;
        }
    }
    if (q == nullptr || q->srq == nullptr || q->rq.full()) {
        return; // a plain QP's receives are its application's to post
    }
    vsrq& s = *q->srq;
    // Each QP on an SRQ holds a share of its receives in the core; one whose share is
    // spent while a sibling's lie unclaimed would answer RNR for ever. The pool first,
    // else a sibling's unclaimed receives go back to it.
    for (auto it = c.qps.begin(); s.pool.empty() && it != c.qps.end(); ++it) {
        vqp& o = *it->second;
        if (&o == q || o.srq != &s || o.conn == k_no_conn || o.rq.tail == o.rq.head) {
            continue;
        }
        const uint32_t n = c.node->ep().withdraw_recvs(o.conn, o.rx_stream);
        o.rq.sub -= n;
        o.clean_stream = o.rq.sub == o.rq.head;
        srq_give_back(o);
        mark_dirty(c, o); // takes its share again from what is left
    }
    if (!s.pool.empty()) {
        srq_take_one(*q);
        mark_dirty(c, *q);
    }
}

void srq_refill(vcontext& c, vqp& q)
{
    vsrq& s = *q.srq;
    const uint32_t users = s.users > 0 ? uint32_t(s.users) : 1;
    const uint64_t target = std::max<uint32_t>(1, std::min<uint32_t>(s.max_wr / users, 256));
    while (q.rq.tail - q.rq.head < target && !q.rq.full() && !s.pool.empty()) {
        srq_take_one(q);
    }
    if (s.limit != 0 && s.pool.size() < s.limit) {
        s.limit = 0; // armed once per ibv_modify_srq(IBV_SRQ_LIMIT)
        post_async(c, IBV_EVENT_SRQ_LIMIT_REACHED, &s.srq);
    }
}

} // namespace metaroce::verbs
