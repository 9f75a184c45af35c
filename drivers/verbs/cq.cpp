// Completion queues (ibv_cq and ibv_cq_ex) and completion channels. A channel is a
// pipe: arming is one-shot, the first completion after it writes the CQ's pointer,
// ibv_get_cq_event reads it (so the fd works with poll/epoll and O_NONBLOCK) and
// ibv_destroy_cq waits until every event it returned was acknowledged.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "verbs/context.hpp"
#include "verbs/forward.hpp"

namespace metaroce::verbs {

namespace {

constexpr uint64_t k_supported_wc_flags =
    IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
    IBV_WC_EX_WITH_DLID_PATH_BITS;

vcq& vcq_of(ibv_cq_ex* cq) { return *reinterpret_cast<vcq*>(cq); }
vcq& vcq_of(ibv_cq* cq) { return *reinterpret_cast<vcq*>(cq); }

// Pops one completion into cq.cur; drives progress first when the queue is empty.
int pop_current(vcq& cq, bool may_drive)
{
    vcontext& c = *cq.ctx;
    std::lock_guard<std::mutex> g(c.mu);
    const uint64_t now = now_ns();
    c.app_poll_ns.store(now, std::memory_order_relaxed);
    if (cq.q.empty() && may_drive) {
        drive(c, now);
    }
    if (cq.q.empty()) {
        return ENOENT;
    }
    cq.cur = cq.q.front();
    cq.q.pop_front();
    cq.ex.wr_id = cq.cur.wr_id;
    cq.ex.status = cq.cur.status;
    return 0;
}

int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr)
{
    if (attr != nullptr && attr->comp_mask != 0) {
        return EINVAL;
    }
    return pop_current(vcq_of(cq), true);
}
int next_poll(ibv_cq_ex* cq) { return pop_current(vcq_of(cq), false); }
void end_poll(ibv_cq_ex*) {}
ibv_wc_opcode read_opcode(ibv_cq_ex* cq) { return vcq_of(cq).cur.opcode; }
uint32_t read_vendor_err(ibv_cq_ex* cq) { return vcq_of(cq).cur.vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* cq) { return vcq_of(cq).cur.byte_len; }
__be32 read_imm_data(ibv_cq_ex* cq) { return vcq_of(cq).cur.imm_data; }
uint32_t read_qp_num(ibv_cq_ex* cq) { return vcq_of(cq).cur.qp_num; }
uint32_t read_src_qp(ibv_cq_ex* cq) { return vcq_of(cq).cur.src_qp; }
unsigned read_wc_flags(ibv_cq_ex* cq) { return vcq_of(cq).cur.wc_flags; }
uint32_t read_slid(ibv_cq_ex* cq) { return vcq_of(cq).cur.slid; }
uint8_t read_sl(ibv_cq_ex* cq) { return vcq_of(cq).cur.sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* cq) { return vcq_of(cq).cur.dlid_path_bits; }

vcq* new_cq(ibv_context* ctx, int cqe, void* user, ibv_comp_channel* ch, uint32_t vector)
{
    vcontext& c = *ctx_of(ctx);
    // One completion vector (num_comp_vectors): an HCA refuses any other, so do we.
    if (cqe < 1 || cqe > (1 << 20) || (ch != nullptr && ch->context != ctx) ||
        vector >= uint32_t(ctx->num_comp_vectors)) {
        errno = EINVAL;
        return nullptr;
    }
    auto* cq = new vcq;
    cq->ctx = &c;
    cq->ex.context = ctx;
    cq->ex.channel = ch;
    cq->ex.cq_context = user;
    cq->ex.cqe = cqe;
    pthread_mutex_init(&cq->ex.mutex, nullptr);
    pthread_cond_init(&cq->ex.cond, nullptr);
    if (ch != nullptr) {
        auto* vch = reinterpret_cast<vchannel*>(ch);
        std::lock_guard<std::mutex> g(vch->mu);
        vch->live.insert(reinterpret_cast<ibv_cq*>(&cq->ex));
        ++ch->refcnt;
    }
    return cq;
}

} // namespace

int poll_cq(ibv_cq* cq, int n, ibv_wc* wc)
{
    vcq& q = vcq_of(cq);
    vcontext& c = *q.ctx;
    std::lock_guard<std::mutex> g(c.mu);
    const uint64_t now = now_ns();
    c.app_poll_ns.store(now, std::memory_order_relaxed);
    if (q.q.empty()) {
        drive(c, now);
    }
    int got = 0;
    while (got < n && !q.q.empty()) {
        wc[got++] = q.q.front();
        q.q.pop_front();
    }
    return got;
}

int req_notify_cq(ibv_cq* cq, int solicited_only)
{
    vcq& q = vcq_of(cq);
    std::lock_guard<std::mutex> g(q.ctx->mu);
    q.armed = true;
    q.solicited_only = solicited_only != 0;
    return 0;
}

ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr)
{
    if ((attr->wc_flags & ~k_supported_wc_flags) != 0 ||
        (attr->comp_mask & ~uint32_t(IBV_CQ_INIT_ATTR_MASK_FLAGS)) != 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    vcq* cq = new_cq(ctx, int(attr->cqe), attr->cq_context, attr->channel, attr->comp_vector);
    if (cq == nullptr) {
        return nullptr;
    }
    cq->wc_flags = attr->wc_flags;
    ibv_cq_ex& e = cq->ex;
    e.start_poll = start_poll;
    e.next_poll = next_poll;
    e.end_poll = end_poll;
    e.read_opcode = read_opcode;
    e.read_vendor_err = read_vendor_err;
    e.read_byte_len = read_byte_len;
    e.read_imm_data = read_imm_data;
    e.read_qp_num = read_qp_num;
    e.read_src_qp = read_src_qp;
    e.read_wc_flags = read_wc_flags;
    e.read_slid = read_slid;
    e.read_sl = read_sl;
    e.read_dlid_path_bits = read_dlid_path_bits;
    return &cq->ex;
}

} // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

MRV_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* user, ibv_comp_channel* ch,
                                 int vector)
{
    if (!is_ours(ctx)) {
        return forward<ibv_cq*>("ibv_create_cq", ctx, cqe, user, ch, vector);
    }
    vcq* cq = new_cq(ctx, cqe, user, ch, uint32_t(vector));
    return cq == nullptr ? nullptr : reinterpret_cast<ibv_cq*>(&cq->ex);
}

MRV_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe)
{
    if (!is_ours(cq->context)) {
        return forward<int>("ibv_resize_cq", cq, cqe);
    }
    if (cqe < 1 || cqe > (1 << 20)) {
        return EINVAL;
    }
    std::lock_guard<std::mutex> g(vcq_of(cq).ctx->mu);
    cq->cqe = cqe;
    return 0;
}

MRV_EXPORT int ibv_destroy_cq(ibv_cq* cq)
{
    if (!is_ours(cq->context)) {
        return forward<int>("ibv_destroy_cq", cq);
    }
    vcq& q = vcq_of(cq);
    {
        std::lock_guard<std::mutex> g(q.ctx->mu);
        if (q.users > 0) {
            return EBUSY;
        }
    }
    if (cq->channel != nullptr) {
        pthread_mutex_lock(&cq->mutex);
        while (cq->comp_events_completed != q.events_read) {
            pthread_cond_wait(&cq->cond, &cq->mutex);
        }
        pthread_mutex_unlock(&cq->mutex);
        auto* vch = reinterpret_cast<vchannel*>(cq->channel);
        std::lock_guard<std::mutex> g(vch->mu);
        vch->live.erase(cq);
        --cq->channel->refcnt;
    }
    pthread_cond_destroy(&cq->cond);
    pthread_mutex_destroy(&cq->mutex);
    delete &q;
    return 0;
}

MRV_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx)
{
    if (!is_ours(ctx)) {
        return forward<ibv_comp_channel*>("ibv_create_comp_channel", ctx);
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return nullptr;
    }
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    auto* ch = new vchannel;
    ch->ch.context = ctx;
    ch->ch.fd = fds[0];
    ch->wfd = fds[1];
    return &ch->ch;
}

MRV_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* ch)
{
    if (!is_ours(ch->context)) {
        return forward<int>("ibv_destroy_comp_channel", ch);
    }
    auto* vch = reinterpret_cast<vchannel*>(ch);
    {
        std::lock_guard<std::mutex> g(vch->mu);
        if (ch->refcnt > 0) {
            errno = EBUSY;
            return EBUSY;
        }
    }
    close(ch->fd);
    close(vch->wfd);
    delete vch;
    return 0;
}

MRV_EXPORT int ibv_get_cq_event(ibv_comp_channel* ch, ibv_cq** cq, void** cq_context)
{
    if (!is_ours(ch->context)) {
        return forward<int>("ibv_get_cq_event", ch, cq, cq_context);
    }
    auto* vch = reinterpret_cast<vchannel*>(ch);
    for (;;) {
        ibv_cq* p = nullptr;
        if (read(ch->fd, &p, sizeof p) != ssize_t(sizeof p)) {
            return -1; // errno from read (EAGAIN on an O_NONBLOCK channel)
        }
        {
            // An event of a CQ destroyed meanwhile is dropped, as the kernel drops it.
            std::lock_guard<std::mutex> g(vch->mu);
            if (vch->live.count(p) == 0) {
                continue;
            }
        }
        pthread_mutex_lock(&p->mutex);
        ++vcq_of(p).events_read;
        pthread_mutex_unlock(&p->mutex);
        *cq = p;
        *cq_context = p->cq_context;
        return 0;
    }
}

MRV_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int n)
{
    if (!is_ours(cq->context)) {
        forward<void>("ibv_ack_cq_events", cq, n);
        return;
    }
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += n;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}
