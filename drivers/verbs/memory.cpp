// Protection domains, memory regions (registered in the core's mr_table, which
// enforces bounds and access on every packet), address handles and shared receive
// queues.
#include <cstdio>
#include <cstring>

#include "verbs/context.hpp"
#include "verbs/forward.hpp"

namespace metaroce::verbs {

int post_srq_recv(ibv_srq* s, ibv_recv_wr* wr, ibv_recv_wr** bad)
{
    auto& srq = *reinterpret_cast<vsrq*>(s);
    vcontext& c = *srq.ctx;
    int err = 0;
    std::lock_guard<std::mutex> g(c.mu);
    for (; wr != nullptr; wr = wr->next) {
        if (wr->num_sge < 0 || uint32_t(wr->num_sge) > srq.max_sge) {
            err = EINVAL;
            break;
        }
        if (srq.pool.size() >= srq.max_wr) {
            err = ENOMEM;
            break;
        }
        std::vector<sge> v(size_t(wr->num_sge));
        for (int i = 0; i < wr->num_sge; ++i) {
            v[size_t(i)] = sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
        }
        srq.pool.emplace_back(recv_rec{wr->wr_id, uint32_t(wr->num_sge)}, std::move(v));
    }
    for (const auto& [qpn, q] : c.qps) {
        if (q->srq == &srq) {
            mark_dirty(c, *q);
        }
    }
    if (err != 0) {
        *bad = wr;
    }
    return err;
}

namespace {
// A registration's Verbs access flags and length as the core's rights; false with errno
// set when the pair is refused (ibv_reg_mr and ibv_rereg_mr alike).
bool core_access(int access, size_t length, uint32_t& out)
{
    const int remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    if ((access & remote) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
        errno = EINVAL; // IB spec 10.6.3.1: remote write needs local write
        return false;
    }
    if ((access & IBV_ACCESS_ON_DEMAND) || length == 0 || length > k_max_msg_len * 2ull) {
        errno = (access & IBV_ACCESS_ON_DEMAND) ? EOPNOTSUPP : EINVAL;
        return false;
    }
    out = 0;
    out |= (access & IBV_ACCESS_LOCAL_WRITE) ? metaroce::access::local_write : 0;
    out |= (access & IBV_ACCESS_REMOTE_WRITE) ? metaroce::access::remote_write : 0;
    out |= (access & IBV_ACCESS_REMOTE_READ) ? metaroce::access::remote_read : 0;
    return true;
}
} // namespace

} // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

MRV_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx)
{
    if (!is_ours(ctx)) {
        return forward<ibv_pd*>("ibv_alloc_pd", ctx);
    }
    static std::atomic<uint32_t> next{1};
    auto* pd = new vpd;
    pd->pd.context = ctx;
    pd->pd.handle = next++;
    return &pd->pd;
}

MRV_EXPORT int ibv_dealloc_pd(ibv_pd* pd)
{
    if (!is_ours(pd->context)) {
        return forward<int>("ibv_dealloc_pd", pd);
    }
    std::lock_guard<std::mutex> g(ctx_of(pd->context)->mu);
    if (vpd_of(pd).users > 0) {
        return EBUSY;
    }
    delete &vpd_of(pd);
    return 0;
}

MRV_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                                    unsigned int access)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_mr*>("ibv_reg_mr_iova2", pd, addr, length, iova, access);
    }
    uint32_t a = 0;
    if (!core_access(int(access), length, a)) {
        return nullptr; // errno set
    }
    vcontext& c = *ctx_of(pd->context);
    std::lock_guard<std::mutex> g(c.mu);
    auto r = c.node->ep().memory().register_region(addr, iova, length, a);
    if (!r) {
        errno = ENOMEM;
        return nullptr;
    }
    c.node->mem_added(addr, length); // DPDK: frames may be sent from it in place
    auto* mr = new vmr;
    mr->mr.context = pd->context;
    mr->mr.pd = pd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = r->lkey;
    mr->mr.lkey = r->lkey;
    mr->mr.rkey = r->rkey;
    mr->access = int(access);
    ++vpd_of(pd).users;
    return &mr->mr;
}

MRV_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_mr*>("ibv_reg_mr", pd, addr, length, access);
    }
    return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr), unsigned(access));
}

MRV_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_mr*>("ibv_reg_mr_iova", pd, addr, length, iova, access);
    }
    return ibv_reg_mr_iova2(pd, addr, length, iova, unsigned(access));
}

MRV_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova,
                                     int fd, int access)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_mr*>("ibv_reg_dmabuf_mr", pd, offset, length, iova, fd, access);
    }
    errno = EOPNOTSUPP;
    return nullptr;
}

MRV_EXPORT int ibv_dereg_mr(ibv_mr* mr)
{
    if (!is_ours(mr->context)) {
        return forward<int>("ibv_dereg_mr", mr);
    }
    vcontext& c = *ctx_of(mr->context);
    std::lock_guard<std::mutex> g(c.mu);
    if (c.node->ep().memory().find_by_lkey(mr->lkey) == nullptr) {
        return EINVAL;
    }
    // DPDK zero copy: a port may still hold frames sent from this memory in place. The
    // backend waits for them (bounded); if they stay, the region stays registered (an
    // HCA's driver refuses with EBUSY while its hardware still uses a region, too).
    std::string why;
    if (const int err = c.node->mem_removed(mr->addr, why); err != 0) {
        std::fprintf(stderr, "metaroce: ibv_dereg_mr: %s\n", why.c_str());
        return err;
    }
    c.node->ep().memory().deregister(mr->lkey);
    --vpd_of(mr->pd).users;
    delete reinterpret_cast<vmr*>(mr);
    return 0;
}

MRV_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access)
{
    if (!is_ours(mr->context)) {
        return forward<int>("ibv_rereg_mr", mr, flags, pd, addr, length, access);
    }
    const int known = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
    const bool translate = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;
    const bool reaccess = (flags & IBV_REREG_MR_CHANGE_ACCESS) != 0;
    if (flags == 0 || (flags & ~known) != 0 || (translate && (addr == nullptr || length == 0)) ||
        ((flags & IBV_REREG_MR_CHANGE_PD) && pd == nullptr)) {
        errno = EINVAL; // as libibverbs' own checks before a provider sees the call
        return IBV_REREG_MR_ERR_INPUT;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        // The core keeps no protection domain per region (any QP of the context may
        // name any of its keys), so a new PD would change nothing it enforces.
        errno = EOPNOTSUPP;
        return IBV_REREG_MR_ERR_INPUT;
    }
    vmr& v = *reinterpret_cast<vmr*>(mr);
    const int new_access = reaccess ? access : v.access;
    void* const new_addr = translate ? addr : mr->addr;
    const size_t new_length = translate ? length : mr->length;
    uint32_t a = 0;
    if (!core_access(new_access, new_length, a)) {
        return IBV_REREG_MR_ERR_INPUT; // errno set
    }
    vcontext& c = *ctx_of(mr->context);
    std::lock_guard<std::mutex> g(c.mu);
    const memory_region* cur = c.node->ep().memory().find_by_lkey(mr->lkey);
    if (cur == nullptr) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    // Peers see new memory at its own address, as ibv_reg_mr registers it, under the same
    // keys.
    const uint64_t va = translate ? reinterpret_cast<uintptr_t>(addr) : cur->va;
    if (translate) {
        // DPDK zero copy: frames sent from the old memory in place are freed first.
        std::string why;
        if (const int err = c.node->mem_removed(mr->addr, why); err != 0) {
            std::fprintf(stderr, "metaroce: ibv_rereg_mr: %s\n", why.c_str());
            errno = err;
            return IBV_REREG_MR_ERR_CMD;
        }
    }
    if (!c.node->ep().memory().reregister(mr->lkey, new_addr, va, new_length, a)) {
        if (translate) {
            c.node->mem_added(mr->addr, mr->length); // the old memory stays registered
        }
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    if (translate) {
        c.node->mem_added(new_addr, new_length);
        mr->addr = new_addr;
        mr->length = new_length;
    }
    v.access = new_access;
    return 0;
}

MRV_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_ah*>("ibv_create_ah", pd, attr);
    }
    // RoCE addresses by GID: an AH without a GRH names no peer (HCAs refuse it too).
    const vcontext& c = *ctx_of(pd->context);
    if (attr == nullptr || !attr->is_global || attr->port_num != 1 ||
        attr->grh.sgid_index >= c.planes.size()) {
        errno = EINVAL;
        return nullptr;
    }
    auto* ah = new vah;
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->attr = *attr;
    std::lock_guard<std::mutex> g(ctx_of(pd->context)->mu);
    ++vpd_of(pd).users;
    return &ah->ah;
}

MRV_EXPORT int ibv_destroy_ah(ibv_ah* ah)
{
    if (!is_ours(ah->context)) {
        return forward<int>("ibv_destroy_ah", ah);
    }
    std::lock_guard<std::mutex> g(ctx_of(ah->context)->mu);
    --vpd_of(ah->pd).users;
    delete reinterpret_cast<vah*>(ah);
    return 0;
}

MRV_EXPORT int ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                                   ibv_ah_attr* attr)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_init_ah_from_wc", ctx, port, wc, grh, attr);
    }
    (void)wc;
    (void)grh;
    std::memset(attr, 0, sizeof *attr);
    attr->port_num = port;
    return EOPNOTSUPP; // needs a UD QP's GRH, and UD is not offered
}

MRV_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_ah*>("ibv_create_ah_from_wc", pd, wc, grh, port);
    }
    errno = EOPNOTSUPP;
    return nullptr;
}

MRV_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_attach_mcast", qp, gid, lid);
    }
    return EOPNOTSUPP;
}

MRV_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid)
{
    if (!is_ours(qp->context)) {
        return forward<int>("ibv_detach_mcast", qp, gid, lid);
    }
    return EOPNOTSUPP;
}

MRV_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr)
{
    if (!is_ours(pd->context)) {
        return forward<ibv_srq*>("ibv_create_srq", pd, attr);
    }
    if (attr->attr.max_wr == 0 || attr->attr.max_wr > 8192 || attr->attr.max_sge > k_max_sge) {
        errno = EINVAL;
        return nullptr;
    }
    vcontext& c = *ctx_of(pd->context);
    auto* s = new vsrq;
    s->ctx = &c;
    s->max_wr = attr->attr.max_wr;
    s->max_sge = std::max<uint32_t>(attr->attr.max_sge, 1);
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    pthread_mutex_init(&s->srq.mutex, nullptr);
    pthread_cond_init(&s->srq.cond, nullptr);
    attr->attr.max_sge = s->max_sge;
    std::lock_guard<std::mutex> g(c.mu);
    ++vpd_of(pd).users;
    return &s->srq;
}

MRV_EXPORT int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask)
{
    if (!is_ours(srq->context)) {
        return forward<int>("ibv_modify_srq", srq, attr, mask);
    }
    auto& s = *reinterpret_cast<vsrq*>(srq);
    std::lock_guard<std::mutex> g(s.ctx->mu);
    if (mask & ~(IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR)) {
        return EINVAL;
    }
    if (mask & IBV_SRQ_MAX_WR) {
        return EINVAL; // not resizable
    }
    if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > s.max_wr) {
        return EINVAL;
    }
    if (mask & IBV_SRQ_LIMIT) {
        s.limit = attr->srq_limit;
    }
    return 0;
}

MRV_EXPORT int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr)
{
    if (!is_ours(srq->context)) {
        return forward<int>("ibv_query_srq", srq, attr);
    }
    auto& s = *reinterpret_cast<vsrq*>(srq);
    std::lock_guard<std::mutex> g(s.ctx->mu);
    attr->max_wr = s.max_wr;
    attr->max_sge = s.max_sge;
    attr->srq_limit = s.limit;
    return 0;
}

MRV_EXPORT int ibv_destroy_srq(ibv_srq* srq)
{
    if (!is_ours(srq->context)) {
        return forward<int>("ibv_destroy_srq", srq);
    }
    auto* s = reinterpret_cast<vsrq*>(srq);
    {
        std::lock_guard<std::mutex> g(s->ctx->mu);
        if (s->users > 0) {
            return EBUSY;
        }
        --vpd_of(srq->pd).users;
    }
    pthread_cond_destroy(&srq->cond);
    pthread_mutex_destroy(&srq->mutex);
    delete s;
    return 0;
}
