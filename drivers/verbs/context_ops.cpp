// The function pointers applications reach through verbs.h's static inline verbs:
// ibv_context_ops (hot path) and the extended verbs_context entries.
#include "verbs/context.hpp"

namespace metaroce::verbs {

int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);                       // cq.cpp
int req_notify_cq(ibv_cq* cq, int solicited_only);               // cq.cpp
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr); // cq.cpp
int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad); // post.cpp
int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad); // post.cpp
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad); // memory.cpp
ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr); // qp.cpp
int query_port_ex(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len); // device.cpp
int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* in,
                    ibv_device_attr_ex* attr, size_t size); // device.cpp

void install_context_ops(verbs_context& v)
{
    ibv_context_ops& o = v.context.ops;
    o.poll_cq = poll_cq;
    o.req_notify_cq = req_notify_cq;
    o.post_send = post_send_op;
    o.post_recv = post_recv_op;
    o.post_srq_recv = post_srq_recv;
    v.query_port = query_port_ex;
    v.query_device_ex = query_device_ex;
    v.create_qp_ex = create_qp_ex;
    v.create_cq_ex = create_cq_ex;
}

} // namespace metaroce::verbs
