// metaroce/verbs_ext.h: paths per connection, plane admin and a QP's connection and
// paths, read from the core under the context's lock.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

#include "metaroce/verbs_ext.h"
#include "verbs/abi.hpp"
#include "verbs/context.hpp"

namespace metaroce::verbs {

std::atomic<uint16_t> g_paths_override{0};

namespace {

uint8_t ext_state(path_state s) noexcept
{
    switch (s) {
    case path_state::good: return METAROCE_PATH_GOOD;
    case path_state::congested: return METAROCE_PATH_CONGESTED;
    case path_state::suspect: return METAROCE_PATH_SUSPECT;
    case path_state::failed: return METAROCE_PATH_FAILED;
    }
    return METAROCE_PATH_FAILED;
}

uint8_t ext_state(conn_state s) noexcept
{
    switch (s) {
    case conn_state::connecting: return METAROCE_CONN_CONNECTING;
    case conn_state::established: return METAROCE_CONN_ESTABLISHED;
    case conn_state::closing: return METAROCE_CONN_CLOSING;
    case conn_state::closed: return METAROCE_CONN_CLOSED;
    case conn_state::error: return METAROCE_CONN_ERROR;
    }
    return METAROCE_CONN_ERROR;
}

} // namespace
} // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

MRV_EXPORT int metaroce_is_metaroce(ibv_context* ctx)
{
    return ctx != nullptr && is_ours(ctx) ? 1 : 0;
}

MRV_EXPORT int metaroce_set_paths(uint16_t paths)
{
    if (paths == 0 || paths > 256) {
        return -EINVAL;
    }
    g_paths_override.store(paths);
    return 0;
}

MRV_EXPORT int metaroce_query_planes(ibv_context* ctx, metaroce_plane_attr* planes, int max)
{
    if (ctx == nullptr || !is_ours(ctx)) {
        return -EOPNOTSUPP;
    }
    if (max < 0 || (max > 0 && planes == nullptr)) {
        return -EINVAL;
    }
    vcontext& c = *ctx_of(ctx);
    std::lock_guard<std::mutex> g(c.mu);
    const std::vector<plane_info> all = c.node->ep().planes();
    for (size_t i = 0; i < all.size() && int(i) < max; ++i) {
        metaroce_plane_attr& a = planes[i];
        a = {};
        a.plane = all[i].plane;
        a.admin_up = all[i].admin_up;
        a.detected_up = all[i].detected_up;
        a.paths = all[i].paths;
        a.addr = i < c.planes.size() ? c.planes[i] : 0;
        a.timeouts = all[i].timeouts;
        a.downs = all[i].downs;
    }
    return int(all.size());
}

MRV_EXPORT int metaroce_set_plane_admin(ibv_context* ctx, uint8_t plane, int up)
{
    if (ctx == nullptr || !is_ours(ctx)) {
        return -EOPNOTSUPP;
    }
    vcontext& c = *ctx_of(ctx);
    std::lock_guard<std::mutex> g(c.mu);
    if (plane >= c.planes.size()) {
        return -EINVAL;
    }
    c.node->ep().set_plane_admin(plane, up != 0, now_ns());
    return 0;
}

MRV_EXPORT int metaroce_query_qp_conn(ibv_qp* qp, metaroce_conn_attr* conn, metaroce_path_attr* paths,
                                      int max_paths)
{
    if (qp == nullptr || qp->context == nullptr || !is_ours(qp->context)) {
        return -EOPNOTSUPP;
    }
    if (conn == nullptr || max_paths < 0 || (max_paths > 0 && paths == nullptr)) {
        return -EINVAL;
    }
    const vqp& q = *reinterpret_cast<const vqp*>(qp); // ibv_qp sits at offset 0
    vcontext& c = *q.ctx;
    std::lock_guard<std::mutex> g(c.mu);
    if (q.conn == k_no_conn || q.tx_stream == 0) {
        return -ENOTCONN;
    }
    const std::optional<conn_info> info = c.node->ep().inspect(q.conn);
    if (!info) {
        return -ENOTCONN;
    }
    *conn = {};
    conn->conn_id = info->id;
    conn->peer_addr = info->peer_addr;
    conn->stream = q.tx_stream;
    conn->state = ext_state(info->state);
    conn->paths = info->paths;
    conn->mtu = info->mtu;
    conn->conn_cwnd = info->conn_cwnd;
    conn->rate_hint_mbps = info->rate_hint_mbps;
    conn->qps = uint32_t(std::count_if(c.qps.begin(), c.qps.end(),
                                       [&](const auto& kv) { return kv.second->conn == q.conn; }));
    conn->state_bytes = info->state_bytes;
    for (size_t i = 0; i < info->path.size() && int(i) < max_paths; ++i) {
        const path_info& p = info->path[i];
        metaroce_path_attr& a = paths[i];
        a = {};
        a.index = p.index;
        a.plane = p.plane;
        a.state = ext_state(p.state);
        a.udp_sport = p.udp_sport;
        a.srtt_ns = p.srtt_ns;
        a.cwnd = p.cwnd;
        a.ecn_fraction = p.acked_rx == 0 ? 0.0 : double(p.acked_ce) / double(p.acked_rx);
        a.tx_packets = p.tx_packets;
        a.retransmits = p.retransmits;
    }
    return int(info->path.size());
}
