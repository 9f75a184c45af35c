// QP creation, the modify/query state machine and destruction. Attribute checks
// are qp_state.cpp's; reaching RTR starts the binding (binding.cpp).
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "verbs/context.hpp"
#include "verbs/forward.hpp"
#include "verbs/qp_state.hpp"

namespace metaroce::verbs {

void install_wr_ops(ibv_qp_ex& ex);  // post.cpp

namespace {

constexpr uint32_t k_max_wr = 8192;
constexpr uint32_t k_max_inline = 512;
constexpr uint64_t k_send_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                                IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                IBV_QP_EX_WITH_RDMA_READ;

vcq* cq_of(ibv_cq* cq) { return reinterpret_cast<vcq*>(cq); }

ibv_mtu mtu_enum(uint16_t mtu)
{
    switch (mtu) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
    }
}

// RoCE v2 addressing: the destination GID is an IPv4-mapped plane address of the
// peer; its node address follows from our own plane layout (drivers/udp/node.hpp;
// on DPDK the same +p*256 layout, drivers/dpdk/planes.hpp).
int peer_from_ah(const vcontext& c, const ibv_ah_attr& ah, uint32_t& peer)
{
    if (!ah.is_global || ah.grh.sgid_index >= c.planes.size()) {
        return EINVAL; // RoCE needs a GRH: run ibv_rc_pingpong with -g, perftest with -x
    }
    const uint8_t* g = ah.grh.dgid.raw;
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(g, prefix, 12) != 0) {
        return EINVAL;
    }
    uint32_t n;
    std::memcpy(&n, g + 12, 4);
    const uint32_t plane_addr = ntohl(n);
    peer = plane_addr - (c.planes[ah.grh.sgid_index] - c.planes[0]);
    return 0;
}

void store_attr(vqp& q, const ibv_qp_attr& a, int mask)
{
    ibv_qp_attr& s = q.attr;
    if (mask & IBV_QP_ACCESS_FLAGS) s.qp_access_flags = a.qp_access_flags;
    if (mask & IBV_QP_PKEY_INDEX) s.pkey_index = a.pkey_index;
    if (mask & IBV_QP_PORT) s.port_num = a.port_num;
    if (mask & IBV_QP_QKEY) s.qkey = a.qkey;
    if (mask & IBV_QP_AV) s.ah_attr = a.ah_attr;
    if (mask & IBV_QP_PATH_MTU) s.path_mtu = a.path_mtu;
    if (mask & IBV_QP_TIMEOUT) s.timeout = a.timeout;
    if (mask & IBV_QP_RETRY_CNT) s.retry_cnt = a.retry_cnt;
    if (mask & IBV_QP_RNR_RETRY) s.rnr_retry = a.rnr_retry;
    if (mask & IBV_QP_RQ_PSN) s.rq_psn = a.rq_psn & 0xffffff;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) s.max_rd_atomic = a.max_rd_atomic;
    if (mask & IBV_QP_ALT_PATH) s.alt_ah_attr = a.alt_ah_attr;
    if (mask & IBV_QP_MIN_RNR_TIMER) s.min_rnr_timer = a.min_rnr_timer;
    if (mask & IBV_QP_SQ_PSN) s.sq_psn = a.sq_psn & 0xffffff;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
    if (mask & IBV_QP_PATH_MIG_STATE) s.path_mig_state = a.path_mig_state;
    if (mask & IBV_QP_DEST_QPN) s.dest_qp_num = a.dest_qp_num & 0xffffff;
    if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) s.en_sqd_async_notify = a.en_sqd_async_notify;
}

} // namespace

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* a)
{
    vcontext& c = *ctx_of(ctx);
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                           IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || (a->comp_mask & ~known) != 0 ||
        ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags != 0)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (a->qp_type != IBV_QPT_RC) {
        errno = EOPNOTSUPP; // the core is a reliable transport; UC/UD are not offered
        return nullptr;
    }
    const bool has_ex = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
    if (has_ex && (a->send_ops_flags & ~k_send_ops) != 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    ibv_qp_cap& cap = a->cap;
    vsrq* srq = reinterpret_cast<vsrq*>(a->srq);
    if (a->pd == nullptr || a->pd->context != ctx || a->send_cq == nullptr ||
        a->recv_cq == nullptr || a->send_cq->context != ctx || a->recv_cq->context != ctx ||
        (srq != nullptr && a->srq->context != ctx) || cap.max_send_wr > k_max_wr ||
        cap.max_recv_wr > k_max_wr || cap.max_send_sge > k_max_sge ||
        cap.max_recv_sge > k_max_sge || cap.max_inline_data > k_max_inline) {
        errno = EINVAL;
        return nullptr;
    }
    auto* q = new vqp;
    q->ctx = &c;
    q->type = a->qp_type;
    q->sig_all = a->sq_sig_all != 0;
    q->has_ex = has_ex;
    q->srq = srq;
    cap.max_send_wr = std::max<uint32_t>(cap.max_send_wr, 1);
    cap.max_send_sge = std::max<uint32_t>(cap.max_send_sge, 1);
    if (srq != nullptr) {
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
    } else {
        cap.max_recv_wr = std::max<uint32_t>(cap.max_recv_wr, 1);
        cap.max_recv_sge = std::max<uint32_t>(cap.max_recv_sge, 1);
    }
    if (cap.max_inline_data > 0) {
        cap.max_inline_data = std::max<uint32_t>(cap.max_inline_data, 64);
    }
    q->cap = cap;
    q->sq.depth = cap.max_send_wr;
    q->sends.resize(q->sq.depth);
    q->send_sges.resize(size_t(q->sq.depth) * cap.max_send_sge);
    // A QP on an SRQ keeps the receives it was handed in its own ring.
    q->rq.depth = srq != nullptr ? std::max<uint32_t>(srq->max_wr, 1) : cap.max_recv_wr;
    q->cap.max_recv_sge = srq != nullptr ? std::max<uint32_t>(srq->max_sge, 1) : cap.max_recv_sge;
    q->recvs.resize(q->rq.depth);
    q->recv_sges.resize(size_t(q->rq.depth) * q->cap.max_recv_sge);
    q->cap.max_recv_wr = cap.max_recv_wr;

    std::lock_guard<std::mutex> g(c.mu);
    if (cap.max_inline_data > 0) {
        q->inline_area.assign(size_t(q->sq.depth) * cap.max_inline_data, 0);
        auto mr = c.node->ep().memory().register_region(q->inline_area.data(), q->inline_area.size(),
                                                        0);
        if (!mr) {
            delete q;
            errno = ENOMEM;
            return nullptr;
        }
        q->inline_lkey = mr->lkey;
        c.node->mem_added(q->inline_area.data(), q->inline_area.size());
    }
    const uint32_t qpn = c.next_qpn;
    c.next_qpn = (c.next_qpn + 1) & 0xffffff;
    if (c.next_qpn < 0x100) {
        c.next_qpn = 0x100; // never 0 (the control QP of spec 12) nor the IB special QPs
    }
    ibv_qp& b = q->ex.qp_base;
    b.context = ctx;
    b.qp_context = a->qp_context;
    b.pd = a->pd;
    b.send_cq = a->send_cq;
    b.recv_cq = a->recv_cq;
    b.srq = a->srq;
    b.handle = qpn;
    b.qp_num = qpn;
    b.state = IBV_QPS_RESET;
    b.qp_type = a->qp_type;
    pthread_mutex_init(&b.mutex, nullptr);
    pthread_cond_init(&b.cond, nullptr);
    q->attr.qp_state = IBV_QPS_RESET;
    q->attr.cap = q->cap;
    if (srq != nullptr) {
        ++srq->users;
    }
    install_wr_ops(q->ex);
    ++cq_of(a->send_cq)->users;
    ++cq_of(a->recv_cq)->users;
    ++vpd_of(a->pd).users;
    c.qps[qpn] = q;
    return &b;
}

int modify_qp_locked(vcontext& c, vqp& q, const ibv_qp_attr& attr, int mask)
{
    const ibv_qp_state cur = q.ex.qp_base.state;
    if (int r = check_modify(q.type, cur, attr, mask, mtu_enum(c.st.mtu), 16); r != 0) {
        return r;
    }
    const ibv_qp_state next = (mask & IBV_QP_STATE) ? attr.qp_state : cur;
    uint32_t peer = 0;
    if (mask & IBV_QP_AV) {
        if (int r = peer_from_ah(c, attr.ah_attr, peer); r != 0) {
            return r;
        }
    }
    store_attr(q, attr, mask);
    const uint64_t now = now_ns();
    q.ex.qp_base.state = next;
    q.attr.qp_state = next;
    q.attr.cur_qp_state = next;
    if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
        // Nothing completes: the rings empty (sequences go on, so the core's late
        // reports of what it still held are recognised and ignored).
        qp_detach(c, q);
        // The QP's completions still in its CQs go too (mlx4, mlx5 and hns clean their
        // CQs on this transition): a QP reset to recover from an error must not hand the
        // program the flushes of its previous life.
        for (ibv_cq* cq : {q.ex.qp_base.send_cq, q.ex.qp_base.recv_cq}) {
            if (cq != nullptr) {
                std::erase_if(cq_of(cq)->q, [&](const ibv_wc& wc) { return wc.qp_num == q.ex.qp_base.qp_num; });
            }
        }
        q.sq.head = q.sq.sub = q.sq.tail;
        q.rq.head = q.rq.sub = q.rq.tail;
        q.reads_inflight = 0;
        q.attr = ibv_qp_attr{};
        q.attr.cap = q.cap;
    } else if (next == IBV_QPS_ERR) {
        q.ex.qp_base.state = cur; // qp_error() does the move
        qp_error(c, q, IBV_WC_WR_FLUSH_ERR, false);
    } else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
        q.peer = peer;
        q.dest_qpn = q.attr.dest_qp_num;
        qp_connect(c, q, now);
    } else if (next == IBV_QPS_RTS) {
        mark_dirty(c, q);
    } else if (next == IBV_QPS_SQD && (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) && attr.en_sqd_async_notify) {
        post_async(c, IBV_EVENT_SQ_DRAINED, &q.ex.qp_base);
    }
    return 0;
}

} // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

MRV_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* a)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_qp*>("ibv_create_qp", pd, a);
    }
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = a->qp_context;
    ex.send_cq = a->send_cq;
    ex.recv_cq = a->recv_cq;
    ex.srq = a->srq;
    ex.cap = a->cap;
    ex.qp_type = a->qp_type;
    ex.sq_sig_all = a->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = create_qp_ex(pd->context, &ex);
    if (qp != nullptr) {
        a->cap = ex.cap;
    }
    return qp;
}

MRV_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_modify_qp", qp, attr, mask);
    }
    vcontext& c = *ctx_of(qp->context);
    int r;
    {
        std::lock_guard<std::mutex> g(c.mu);
        r = modify_qp_locked(c, *reinterpret_cast<vqp*>(qp), *attr, mask);
    }
    wake(c);
    return r;
}

MRV_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_query_qp", qp, attr, mask, init);
    }
    (void)mask; // everything is returned, as providers do
    vcontext& c = *ctx_of(qp->context);
    std::lock_guard<std::mutex> g(c.mu);
    const vqp& q = *reinterpret_cast<vqp*>(qp);
    *attr = q.attr;
    attr->qp_state = qp->state;
    attr->cur_qp_state = qp->state;
    attr->cap = q.cap;
    attr->sq_draining = 0;
    if (init != nullptr) {
        std::memset(init, 0, sizeof *init);
        init->qp_context = qp->qp_context;
        init->send_cq = qp->send_cq;
        init->recv_cq = qp->recv_cq;
        init->srq = qp->srq;
        init->cap = q.cap;
        init->qp_type = q.type;
        init->sq_sig_all = q.sig_all;
    }
    return 0;
}

MRV_EXPORT int ibv_destroy_qp(ibv_qp* qp)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_destroy_qp", qp);
    }
    vcontext& c = *ctx_of(qp->context);
    auto* q = reinterpret_cast<vqp*>(qp);
    {
        std::lock_guard<std::mutex> g(c.mu);
        // Inline data may still be held by a port (DPDK zero copy): then nothing changes.
        if (std::string why; q->inline_lkey != 0 && c.node->mem_removed(q->inline_area.data(), why) != 0) {
            std::fprintf(stderr, "metaroce: ibv_destroy_qp: %s\n", why.c_str());
            return EBUSY;
        }
        qp_detach(c, *q);
        c.qps.erase(qp->qp_num);
        --reinterpret_cast<vcq*>(qp->send_cq)->users;
        --reinterpret_cast<vcq*>(qp->recv_cq)->users;
        --vpd_of(qp->pd).users;
        if (q->srq != nullptr) {
            --q->srq->users;
        }
        if (q->inline_lkey != 0) {
            c.node->ep().memory().deregister(q->inline_lkey);
        }
    }
    pthread_cond_destroy(&qp->cond);
    pthread_mutex_destroy(&qp->mutex);
    delete q;
    return 0;
}

MRV_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp)
{
    if (!is_ours(qp->context)) {
        return forward<ibv_qp_ex*>("ibv_qp_to_qp_ex", qp);
    }
    auto* q = reinterpret_cast<vqp*>(qp);
    return q->has_ex ? &q->ex : nullptr;
}

MRV_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_query_qp_data_in_order", qp, op, flags);
    }
    // Multipath placement: bytes of a message land in any order (spec 8.3); only a
    // completion orders them. No capability bit either.
    return 0;
}

MRV_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_query_ece", qp, ece);
    }
    return EOPNOTSUPP;
}

MRV_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_set_ece", qp, ece);
    }
    return EOPNOTSUPP;
}
