// Discovery and queries: metaroce0 is listed first, before any real device the
// distribution's libibverbs finds; everything about a real device goes to it.
#include <arpa/inet.h>
#include <net/if.h>
#include <ifaddrs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "verbs/context.hpp"
#include "verbs/forward.hpp"

namespace metaroce::verbs {
namespace {

// Zeroed well past ibv_device: tools read verbs_device fields behind it (the note in
// shared/notes/verbs-frontend.md, pitfall 3).
struct vdevice {
    ibv_device dev{};
    unsigned char beyond[1024]{};
};

vdevice& dev()
{
    static vdevice d = [] {
        vdevice v;
        v.dev.node_type = IBV_NODE_CA;
        v.dev.transport_type = IBV_TRANSPORT_IB;
        std::snprintf(v.dev.name, sizeof v.dev.name, "metaroce0");
        std::snprintf(v.dev.dev_name, sizeof v.dev.dev_name, "metaroce_verbs0");
        std::snprintf(v.dev.dev_path, sizeof v.dev.dev_path, "/nonexistent/metaroce_verbs0");
        std::snprintf(v.dev.ibdev_path, sizeof v.dev.ibdev_path, "/nonexistent/metaroce0");
        return v;
    }();
    return d;
}

std::mutex g_lists_mu;
std::map<ibv_device**, ibv_device**> g_lists; // our array -> the real library's

// A locally administered EUI-64 from a node address: 02:00:a.b.c.d with ff:fe inside.
uint64_t guid_of(uint32_t addr)
{
    const uint64_t mac = (0x0200ull << 32) | addr;
    const uint64_t eui = ((mac >> 24) << 40) | (0xfffeull << 24) | (mac & 0xffffff);
    return eui;
}

uint64_t be64(uint64_t v) { return __builtin_bswap64(v); }

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

void fill_gid(uint32_t addr, ibv_gid* gid)
{
    std::memset(gid, 0, sizeof *gid);
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    const uint32_t n = htonl(addr);
    std::memcpy(&gid->raw[12], &n, 4);
}

// The interface holding `addr` (RoCE GID entries name their netdev), 0 if none.
uint32_t ifindex_of(uint32_t addr)
{
    ifaddrs* list = nullptr;
    uint32_t idx = 0;
    if (getifaddrs(&list) != 0) {
        return 0;
    }
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr != nullptr && i->ifa_addr->sa_family == AF_INET &&
            ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr) == addr) {
            idx = if_nametoindex(i->ifa_name);
            break;
        }
        // 127.0.0.0/8 is all on lo.
        if (idx == 0 && (addr >> 24) == 127 && (i->ifa_flags & IFF_LOOPBACK)) {
            idx = if_nametoindex(i->ifa_name);
        }
    }
    freeifaddrs(list);
    return idx;
}

} // namespace

ibv_device* our_device() noexcept { return &dev().dev; }

void fill_device_attr(const vcontext& c, ibv_device_attr& a)
{
    std::memset(&a, 0, sizeof a);
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "metaroce 0.1.0");
    a.node_guid = be64(guid_of(c.addr));
    a.sys_image_guid = a.node_guid;
    a.max_mr_size = k_max_msg_len;
    a.page_size_cap = 4096;
    a.vendor_id = 0xffffff;    // a software device's (as rxe): no vendor's driver paths, never 0
    a.vendor_part_id = 0x4d52; // "MR"
    a.hw_ver = 1;
    a.max_qp = 1 << 16;
    a.max_qp_wr = 8192;
    a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
                         IBV_DEVICE_PORT_ACTIVE_EVENT;
    a.max_sge = int(k_max_sge);
    a.max_sge_rd = int(k_max_sge);
    a.max_cq = 1 << 16;
    a.max_cqe = 1 << 20;
    a.max_mr = int(c.node->max_mrs()) - 64; // the front end keeps a few
    a.max_pd = 1 << 16;
    a.max_qp_rd_atom = 16;
    a.max_res_rd_atom = 16 * 1024;
    a.max_qp_init_rd_atom = 16;
    a.atomic_cap = IBV_ATOMIC_NONE;
    a.max_ah = 1 << 16;
    a.max_srq = 1 << 12;
    a.max_srq_wr = 8192;
    a.max_srq_sge = int(k_max_sge);
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 15;
    a.phys_port_cnt = 1;
}

void fill_port_attr(const vcontext& c, ibv_port_attr& p)
{
    std::memset(&p, 0, sizeof p);
    p.state = IBV_PORT_ACTIVE;
    p.max_mtu = IBV_MTU_4096;
    p.active_mtu = mtu_enum(c.st.mtu);
    p.gid_tbl_len = int(c.planes.size());
    p.max_msg_sz = k_max_msg_len;
    p.pkey_tbl_len = 1;
    p.max_vl_num = 1;
    p.active_width = 2;  // 4X
    p.active_speed = 32; // EDR: a nominal 100 Gb/s; the real rate is the backend's
    p.phys_state = 5;    // LinkUp
    p.link_layer = IBV_LINK_LAYER_ETHERNET;
}

int query_port_ex(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len)
{
    if (port != 1) {
        return EINVAL;
    }
    ibv_port_attr full;
    fill_port_attr(*ctx_of(ctx), full);
    std::memcpy(attr, &full, std::min(len, sizeof full));
    return 0;
}

int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input*, ibv_device_attr_ex* attr,
                    size_t size)
{
    ibv_device_attr_ex full{};
    fill_device_attr(*ctx_of(ctx), full.orig_attr);
    full.phys_port_cnt_ex = 1;
    std::memset(attr, 0, size);
    std::memcpy(attr, &full, std::min(size, sizeof full));
    return 0;
}

} // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

MRV_EXPORT ibv_device** ibv_get_device_list(int* num)
{
    int rn = 0;
    ibv_device** real = nullptr;
    if (auto f = real_fn<ibv_device** (*)(int*)>("ibv_get_device_list")) {
        real = f(&rn);
    }
    if (real == nullptr) {
        rn = 0;
    }
    auto** out = new ibv_device*[size_t(rn) + 2];
    out[0] = our_device();
    for (int i = 0; i < rn; ++i) {
        out[i + 1] = real[i];
    }
    out[rn + 1] = nullptr;
    {
        std::lock_guard<std::mutex> g(g_lists_mu);
        g_lists[out] = real;
    }
    if (num != nullptr) {
        *num = rn + 1;
    }
    return out;
}

MRV_EXPORT void ibv_free_device_list(ibv_device** list)
{
    ibv_device** real = nullptr;
    {
        std::lock_guard<std::mutex> g(g_lists_mu);
        const auto it = g_lists.find(list);
        if (it == g_lists.end()) {
            forward<void>("ibv_free_device_list", list);
            return;
        }
        real = it->second;
        g_lists.erase(it);
    }
    if (real != nullptr) {
        forward<void>("ibv_free_device_list", real);
    }
    delete[] list;
}

MRV_EXPORT const char* ibv_get_device_name(ibv_device* d)
{
    if (d == our_device()) {
        return d->name;
    }
    return forward<const char*>("ibv_get_device_name", d);
}

MRV_EXPORT __be64 ibv_get_device_guid(ibv_device* d)
{
    if (d == our_device()) {
        const settings st = load_settings();
        return be64(guid_of(st.plane_addrs.empty() ? (127u << 24 | 1) : st.plane_addrs[0]));
    }
    return forward<__be64>("ibv_get_device_guid", d);
}

MRV_EXPORT int ibv_get_device_index(ibv_device* d)
{
    if (d == our_device()) {
        return 0x4d52; // no kernel index; fixed and outside the kernel's small numbers
    }
    return forward<int>("ibv_get_device_index", d);
}

MRV_EXPORT ibv_context* ibv_open_device(ibv_device* d)
{
    if (d != our_device()) {
        return forward<ibv_context*>("ibv_open_device", d);
    }
    std::string err;
    ibv_context* ctx = open_device(err);
    if (ctx == nullptr) {
        std::fprintf(stderr, "metaroce: cannot open metaroce0: %s\n", err.c_str());
        errno = ENODEV;
    }
    return ctx;
}

// Sharing a context with another process (or importing it here) needs the kernel's
// uverbs objects, which a software device has none of.
MRV_EXPORT ibv_context* ibv_import_device(int cmd_fd)
{
    if (!is_our_cmd_fd(cmd_fd)) {
        return forward<ibv_context*>("ibv_import_device", cmd_fd);
    }
    errno = EOPNOTSUPP;
    return nullptr;
}

MRV_EXPORT int ibv_close_device(ibv_context* ctx)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_close_device", ctx);
    }
    return close_device(ctx);
}

MRV_EXPORT int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_query_device", ctx, attr);
    }
    fill_device_attr(*ctx_of(ctx), *attr);
    return 0;
}

MRV_EXPORT int ibv_query_port(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_query_port", ctx, port, attr);
    }
    // The compat struct is ibv_port_attr up to link_layer plus a reserved byte.
    return query_port_ex(ctx, port, reinterpret_cast<ibv_port_attr*>(attr),
                         offsetof(ibv_port_attr, flags) + 1);
}

MRV_EXPORT int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_query_gid", ctx, port, index, gid);
    }
    const vcontext& c = *ctx_of(ctx);
    if (port != 1 || index < 0 || size_t(index) >= c.planes.size()) {
        errno = EINVAL;
        return -1;
    }
    fill_gid(c.planes[size_t(index)], gid);
    return 0;
}

MRV_EXPORT int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index, uint32_t* type)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_query_gid_type", ctx, port, index, type);
    }
    if (port != 1 || index >= ctx_of(ctx)->planes.size()) {
        errno = EINVAL;
        return -1;
    }
    *type = 1; // IBV_GID_TYPE_SYSFS_ROCE_V2
    return 0;
}

MRV_EXPORT int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index,
                                 ibv_gid_entry* entry, uint32_t flags, size_t size)
{
    if (!is_ours(ctx)) {
        return forward<int>("_ibv_query_gid_ex", ctx, port, index, entry, flags, size);
    }
    const vcontext& c = *ctx_of(ctx);
    if (port != 1 || index >= c.planes.size() || flags != 0 || size < sizeof(ibv_gid_entry)) {
        return EINVAL;
    }
    std::memset(entry, 0, size);
    fill_gid(c.planes[index], &entry->gid);
    entry->gid_index = index;
    entry->port_num = 1;
    entry->gid_type = IBV_GID_TYPE_ROCE_V2;
    entry->ndev_ifindex = ifindex_of(c.planes[index]);
    return 0;
}

MRV_EXPORT ssize_t _ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries,
                                        size_t max, uint32_t flags, size_t size)
{
    if (!is_ours(ctx)) {
        return forward<ssize_t>("_ibv_query_gid_table", ctx, entries, max, flags, size);
    }
    const vcontext& c = *ctx_of(ctx);
    if (flags != 0 || size < sizeof(ibv_gid_entry)) {
        return -EINVAL;
    }
    if (max < c.planes.size()) {
        return -EINVAL; // as the kernel's GID table query: too small for the table
    }
    for (uint32_t i = 0; i < c.planes.size(); ++i) {
        auto* e = reinterpret_cast<ibv_gid_entry*>(reinterpret_cast<char*>(entries) + size * i);
        _ibv_query_gid_ex(ctx, 1, i, e, 0, size);
    }
    return ssize_t(c.planes.size());
}

MRV_EXPORT int ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_query_pkey", ctx, port, index, pkey);
    }
    if (port != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htons(0xffff); // the default partition
    return 0;
}

MRV_EXPORT int ibv_get_pkey_index(ibv_context* ctx, uint8_t port, __be16 pkey)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_get_pkey_index", ctx, port, pkey);
    }
    return port == 1 && (ntohs(pkey) & 0x7fff) == 0x7fff ? 0 : -1;
}

MRV_EXPORT int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_get_async_event", ctx, event);
    }
    const ssize_t n = read(ctx->async_fd, event, sizeof *event);
    return n == ssize_t(sizeof *event) ? 0 : -1;
}

MRV_EXPORT void ibv_ack_async_event(ibv_async_event* event)
{
    // Events of our objects are not counted: destroying them never waits for acks.
    ibv_context* ctx = nullptr;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: ctx = event->element.cq->context; break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: ctx = event->element.srq->context; break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: ctx = event->element.qp->context; break;
    default: break;
    }
    if (!is_ours(ctx)) {
        forward<void>("ibv_ack_async_event", event);
    }
}

MRV_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* ctx, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                           uint16_t* vid)
{
    if (!is_ours(ctx)) {
        return forward<int>("ibv_resolve_eth_l2_from_gid", ctx, attr, eth_mac, vid);
    }
    (void)attr;
    std::memset(eth_mac, 0, 6); // the backend resolves its own neighbours
    *vid = 0xffff;
    return 0;
}
