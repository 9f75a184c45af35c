// Posting: ibv_post_send/ibv_post_recv (through ibv_context_ops) and the ibv_wr_*
// batch API of ibv_qp_ex. Requests enter the QP's rings; submit() hands them to the
// core as soon as the QP is bound (spec 12), in posting order.
#include <cstring>

#include "verbs/context.hpp"

namespace metaroce::verbs {
namespace {

vqp& vqp_of(ibv_qp* qp) { return *reinterpret_cast<vqp*>(qp); }
vqp& vqp_of(ibv_qp_ex* qp) { return *reinterpret_cast<vqp*>(qp); }

bool supported(ibv_wr_opcode op)
{
    return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
           op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_RDMA_READ;
}

void flush_now(vcontext& c, vqp& q)
{
    // Posting to a QP in the error state completes the request with a flush at once.
    q.ex.qp_base.state = IBV_QPS_RTS;
    qp_error(c, q, IBV_WC_WR_FLUSH_ERR, false);
}

// The ring slot's record after it was filled: start the unbound clock, or flush.
void queued(vcontext& c, vqp& q, uint64_t now)
{
    if (q.ex.qp_base.state == IBV_QPS_ERR) {
        flush_now(c, q);
        return;
    }
    if (q.tx_stream == 0 && q.sq.tail == q.sq.sub + 1) {
        restart_wait(q, now);
    }
}

// Copies inline data out of the application's buffers (their addresses are plain
// pointers; lkeys are ignored, as for a real HCA).
void copy_inline(vqp& q, uint32_t slot, const ibv_sge* sg, int n, send_rec& r)
{
    uint8_t* dst = &q.inline_area[size_t(slot) * q.cap.max_inline_data];
    uint32_t off = 0;
    for (int i = 0; i < n; ++i) {
        std::memcpy(dst + off, reinterpret_cast<const void*>(uintptr_t(sg[i].addr)), sg[i].length);
        off += sg[i].length;
    }
    r.inlined = true;
    r.length = off;
    r.num_sge = 0;
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad)
{
    vqp& q = vqp_of(qp);
    vcontext& c = *q.ctx;
    int err = 0;
    {
        std::lock_guard<std::mutex> g(c.mu);
        const uint64_t now = now_ns();
        for (; wr != nullptr; wr = wr->next) {
            const ibv_qp_state st = qp->state;
            if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR) {
                err = EINVAL;
                break;
            }
            const bool inl = (wr->send_flags & IBV_SEND_INLINE) != 0;
            uint64_t total = 0;
            for (int i = 0; i < wr->num_sge; ++i) {
                total += wr->sg_list[i].length;
            }
            if (!supported(wr->opcode) || wr->num_sge < 0 ||
                (!inl && uint32_t(wr->num_sge) > q.cap.max_send_sge) ||
                (inl && (total > q.cap.max_inline_data || wr->opcode == IBV_WR_RDMA_READ))) {
                err = EINVAL;
                break;
            }
            if (q.sq.full()) {
                err = ENOMEM;
                break;
            }
            const uint32_t slot = q.sq.slot(q.sq.tail);
            send_rec& r = q.sends[slot];
            r = send_rec{};
            r.wr_id = wr->wr_id;
            r.op = wr->opcode;
            r.flags = wr->send_flags;
            r.remote_addr = wr->wr.rdma.remote_addr;
            r.rkey = wr->wr.rdma.rkey;
            r.imm = wr->imm_data;
            r.length = uint32_t(total);
            if (inl) {
                copy_inline(q, slot, wr->sg_list, wr->num_sge, r);
            } else {
                r.num_sge = uint32_t(wr->num_sge);
                sge* s = &q.send_sges[size_t(slot) * q.cap.max_send_sge];
                for (int i = 0; i < wr->num_sge; ++i) {
                    s[i] = sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
                }
            }
            ++q.sq.tail;
            queued(c, q, now);
        }
        submit(c, q, now);
    }
    wake(c);
    if (err != 0) {
        *bad = wr;
    }
    return err;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad)
{
    vqp& q = vqp_of(qp);
    vcontext& c = *q.ctx;
    int err = 0;
    std::lock_guard<std::mutex> g(c.mu);
    for (; wr != nullptr; wr = wr->next) {
        if (q.srq != nullptr || qp->state == IBV_QPS_RESET || wr->num_sge < 0 ||
            uint32_t(wr->num_sge) > q.cap.max_recv_sge) {
            err = EINVAL;
            break;
        }
        if (q.rq.full()) {
            err = ENOMEM;
            break;
        }
        const uint32_t slot = q.rq.slot(q.rq.tail);
        q.recvs[slot] = recv_rec{wr->wr_id, uint32_t(wr->num_sge)};
        sge* s = &q.recv_sges[size_t(slot) * q.cap.max_recv_sge];
        for (int i = 0; i < wr->num_sge; ++i) {
            s[i] = sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
        }
        ++q.rq.tail;
        if (qp->state == IBV_QPS_ERR) {
            flush_now(c, q);
        }
    }
    submit(c, q, now_ns());
    if (err != 0) {
        *bad = wr;
    }
    return err;
}

// ibv_wr_*: the batch is built beyond sq.tail, where nothing else looks (the
// application serialises a QP's posting, as with any provider); wr_complete makes it
// visible under the context lock. The lock is not held across the batch, so polling a
// CQ between wr_start and wr_complete is fine.
send_rec* add(ibv_qp_ex* x, ibv_wr_opcode op)
{
    vqp& q = vqp_of(x);
    if (q.build_err != 0) {
        return nullptr;
    }
    uint64_t head;
    {
        std::lock_guard<std::mutex> g(q.ctx->mu);
        head = q.sq.head;
    }
    if (q.build - head >= q.sq.depth) {
        q.build_err = ENOMEM;
        return nullptr;
    }
    send_rec& r = q.sends[q.sq.slot(q.build++)];
    r = send_rec{};
    r.wr_id = x->wr_id;
    r.flags = x->wr_flags;
    r.op = op;
    return &r;
}

send_rec* last(ibv_qp_ex* x)
{
    vqp& q = vqp_of(x);
    if (q.build_err != 0 || q.build == q.sq.tail) {
        q.build_err = q.build_err != 0 ? q.build_err : EINVAL;
        return nullptr;
    }
    return &q.sends[q.sq.slot(q.build - 1)];
}

void wr_start(ibv_qp_ex* x)
{
    vqp& q = vqp_of(x);
    std::lock_guard<std::mutex> g(q.ctx->mu);
    q.build = q.sq.tail;
    q.build_err = 0;
}

int wr_complete(ibv_qp_ex* x)
{
    vqp& q = vqp_of(x);
    vcontext& c = *q.ctx;
    c.mu.lock();
    int err = q.build_err;
    const ibv_qp_state st = q.ex.qp_base.state;
    if (err == 0 && (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR)) {
        err = EINVAL;
    }
    if (err == 0) {
        const uint64_t now = now_ns();
        const bool was_idle = q.sq.tail == q.sq.sub;
        q.sq.tail = q.build;
        if (q.ex.qp_base.state == IBV_QPS_ERR) {
            flush_now(c, q);
        } else if (was_idle && q.tx_stream == 0) {
            restart_wait(q, now);
        }
        submit(c, q, now);
    }
    q.build = q.sq.tail;
    c.mu.unlock();
    wake(c);
    return err;
}

void wr_abort(ibv_qp_ex* x)
{
    vqp& q = vqp_of(x);
    std::lock_guard<std::mutex> g(q.ctx->mu);
    q.build = q.sq.tail;
}

void wr_send(ibv_qp_ex* x) { add(x, IBV_WR_SEND); }
void wr_send_imm(ibv_qp_ex* x, __be32 imm)
{
    if (send_rec* r = add(x, IBV_WR_SEND_WITH_IMM)) {
        r->imm = imm;
    }
}
void wr_rdma_write(ibv_qp_ex* x, uint32_t rkey, uint64_t va)
{
    if (send_rec* r = add(x, IBV_WR_RDMA_WRITE)) {
        r->rkey = rkey;
        r->remote_addr = va;
    }
}
void wr_rdma_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t va, __be32 imm)
{
    if (send_rec* r = add(x, IBV_WR_RDMA_WRITE_WITH_IMM)) {
        r->rkey = rkey;
        r->remote_addr = va;
        r->imm = imm;
    }
}
void wr_rdma_read(ibv_qp_ex* x, uint32_t rkey, uint64_t va)
{
    if (send_rec* r = add(x, IBV_WR_RDMA_READ)) {
        r->rkey = rkey;
        r->remote_addr = va;
    }
}

void wr_set_sge_list(ibv_qp_ex* x, size_t n, const ibv_sge* list)
{
    vqp& q = vqp_of(x);
    send_rec* r = last(x);
    if (r == nullptr) {
        return;
    }
    if (n > q.cap.max_send_sge) {
        q.build_err = EINVAL;
        return;
    }
    sge* s = &q.send_sges[size_t(q.sq.slot(q.build - 1)) * q.cap.max_send_sge];
    uint64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        s[i] = sge{list[i].addr, list[i].length, list[i].lkey};
        total += list[i].length;
    }
    r->num_sge = uint32_t(n);
    r->length = uint32_t(total);
    r->inlined = false;
}

void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t len)
{
    const ibv_sge one{addr, len, lkey};
    wr_set_sge_list(x, 1, &one);
}

void wr_set_inline_data_list(ibv_qp_ex* x, size_t n, const ibv_data_buf* bufs)
{
    vqp& q = vqp_of(x);
    send_rec* r = last(x);
    if (r == nullptr) {
        return;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
        total += bufs[i].length;
    }
    if (total > q.cap.max_inline_data || r->op == IBV_WR_RDMA_READ) {
        q.build_err = EINVAL;
        return;
    }
    uint8_t* dst = &q.inline_area[size_t(q.sq.slot(q.build - 1)) * q.cap.max_inline_data];
    for (size_t i = 0; i < n; ++i) {
        std::memcpy(dst, bufs[i].addr, bufs[i].length);
        dst += bufs[i].length;
    }
    r->inlined = true;
    r->length = uint32_t(total);
    r->num_sge = 0;
}

void wr_set_inline_data(ibv_qp_ex* x, void* addr, size_t len)
{
    const ibv_data_buf one{addr, len};
    wr_set_inline_data_list(x, 1, &one);
}

void wr_unsupported(ibv_qp_ex* x) { vqp_of(x).build_err = EOPNOTSUPP; }
void wr_atomic_cmp_swp(ibv_qp_ex* x, uint32_t, uint64_t, uint64_t, uint64_t) { wr_unsupported(x); }
void wr_atomic_fetch_add(ibv_qp_ex* x, uint32_t, uint64_t, uint64_t) { wr_unsupported(x); }
void wr_bind_mw(ibv_qp_ex* x, ibv_mw*, uint32_t, const ibv_mw_bind_info*) { wr_unsupported(x); }
void wr_local_inv(ibv_qp_ex* x, uint32_t) { wr_unsupported(x); }
void wr_send_inv(ibv_qp_ex* x, uint32_t) { wr_unsupported(x); }
void wr_send_tso(ibv_qp_ex* x, void*, uint16_t, uint16_t) { wr_unsupported(x); }
void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah*, uint32_t, uint32_t) { wr_unsupported(x); }
void wr_set_xrc_srqn(ibv_qp_ex* x, uint32_t) { wr_unsupported(x); }
void wr_atomic_write(ibv_qp_ex* x, uint32_t, uint64_t, const void*) { wr_unsupported(x); }

} // namespace

int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) { return post_send(qp, wr, bad); }
int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) { return post_recv(qp, wr, bad); }

void install_wr_ops(ibv_qp_ex& e)
{
    e.wr_start = wr_start;
    e.wr_complete = wr_complete;
    e.wr_abort = wr_abort;
    e.wr_send = wr_send;
    e.wr_send_imm = wr_send_imm;
    e.wr_rdma_write = wr_rdma_write;
    e.wr_rdma_write_imm = wr_rdma_write_imm;
    e.wr_rdma_read = wr_rdma_read;
    e.wr_set_sge = wr_set_sge;
    e.wr_set_sge_list = wr_set_sge_list;
    e.wr_set_inline_data = wr_set_inline_data;
    e.wr_set_inline_data_list = wr_set_inline_data_list;
    e.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    e.wr_atomic_fetch_add = wr_atomic_fetch_add;
    e.wr_bind_mw = wr_bind_mw;
    e.wr_local_inv = wr_local_inv;
    e.wr_send_inv = wr_send_inv;
    e.wr_send_tso = wr_send_tso;
    e.wr_set_ud_addr = wr_set_ud_addr;
    e.wr_set_xrc_srqn = wr_set_xrc_srqn;
    e.wr_atomic_write = wr_atomic_write;
}

} // namespace metaroce::verbs
