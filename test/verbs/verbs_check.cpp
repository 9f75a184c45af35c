// Verbs semantics over metaroce, through the public libibverbs API only (linked
// against the system libibverbs, run under metaroce-run). Each mode is one test:
//   loopback   two QPs of one device connected to each other: WRITE, SEND with
//              immediate, READ, gather lists, inline data, unsignaled requests,
//              IBV_SEND_FENCE; every landed byte is compared
//   channel    completion channels: one-shot arming, the fd under O_NONBLOCK,
//              ibv_get_cq_event/ibv_ack_cq_events, destroy after acks
//   modify     the modify_qp state machine: missing and extra attributes refused,
//              query_qp reflects the state, ERR flushes posted receives
//   extended   CQ_EX polling, ibv_create_qp_ex and the ibv_wr_* batch API
//   shared     two devices (two nodes) with two QP pairs: data on both; the test
//              script checks the log shows one connection
//   footprint  heap bytes per connection and per further QP (printed; flat checked)
//   deadpeer   a QP whose peer never answers: its send completes with
//              IBV_WC_RETRY_EXC_ERR, the QP is in the error state, QP_FATAL is raised
//   stall      the whole process stopped (SIGSTOP) for longer than a waiting QP's
//              budget: once it runs again, the peer QP binds and the WRITE lands
//   latepeer   the peer node opens 350 ms after a QP's SEND was posted: connecting
//              outlasts that (the QP's budget is ~0.5 s) and the SEND lands
//   contexts   the device opened twice in one process (one METAROCE_ADDR): one node,
//              one GID; a QP of each context connected to the other, data compared;
//              the first context closed before the second
//   refusals   what an HCA refuses is refused, with its errno: a CQ on a completion
//              vector the device lacks, an AH without a GRH on RoCE, a GID table buffer
//              too small, rereg_mr (not offered: EOPNOTSUPP); the vendor id is not 0
//   srq        one SRQ under four QPs, one receive posted at a time, SENDs on each QP
//              in turn: every SEND lands (no QP's share of the SRQ starves another)
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                               \
        }                                                                             \
    } while (0)
#define REQUIRE(cond)                                                                 \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

ibv_context* open_metaroce()
{
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    REQUIRE(list != nullptr && n >= 1);
    ibv_context* ctx = nullptr;
    for (int i = 0; i < n; ++i) {
        if (std::strcmp(ibv_get_device_name(list[i]), "metaroce0") == 0) {
            ctx = ibv_open_device(list[i]);
        }
    }
    ibv_free_device_list(list);
    REQUIRE(ctx != nullptr);
    return ctx;
}

struct side {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    std::vector<uint8_t> buf;
    ibv_mr* mr = nullptr;
};

side make_side(ibv_context* ctx, size_t bytes, ibv_comp_channel* ch = nullptr, int inline_bytes = 0)
{
    side s;
    s.ctx = ctx;
    s.pd = ibv_alloc_pd(ctx);
    REQUIRE(s.pd != nullptr);
    s.cq = ibv_create_cq(ctx, 256, nullptr, ch, 0);
    REQUIRE(s.cq != nullptr);
    ibv_qp_init_attr a{};
    a.send_cq = s.cq;
    a.recv_cq = s.cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 64;
    a.cap.max_recv_wr = 64;
    a.cap.max_send_sge = 4;
    a.cap.max_recv_sge = 4;
    a.cap.max_inline_data = uint32_t(inline_bytes);
    s.qp = ibv_create_qp(s.pd, &a);
    REQUIRE(s.qp != nullptr);
    s.buf.assign(bytes, 0);
    s.mr = ibv_reg_mr(s.pd, s.buf.data(), bytes,
                      int(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
    REQUIRE(s.mr != nullptr);
    return s;
}

void to_init(ibv_qp* qp)
{
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                      IBV_QP_ACCESS_FLAGS) == 0);
}

ibv_gid gid_of(ibv_context* ctx)
{
    ibv_gid g{};
    REQUIRE(ibv_query_gid(ctx, 1, 0, &g) == 0);
    return g;
}

// The GID of a node address that has no context in this process (an IPv4-mapped GID).
ibv_gid gid_of_addr(const char* addr)
{
    ibv_gid g{};
    g.raw[10] = 0xff;
    g.raw[11] = 0xff;
    in_addr ia{};
    REQUIRE(inet_pton(AF_INET, addr, &ia) == 1);
    std::memcpy(&g.raw[12], &ia.s_addr, 4);
    return g;
}

int to_rtr(ibv_qp* qp, const ibv_gid& dgid, uint32_t dqpn)
{
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dqpn;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER);
}

void to_rts(ibv_qp* qp, uint8_t timeout = 14, uint8_t retry = 7)
{
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = timeout;
    a.retry_cnt = retry;
    a.rnr_retry = 7;
    a.sq_psn = 0;
    a.max_rd_atomic = 1;
    REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

void connect_pair(side& a, side& b)
{
    to_init(a.qp);
    to_init(b.qp);
    REQUIRE(to_rtr(a.qp, gid_of(b.ctx), b.qp->qp_num) == 0);
    REQUIRE(to_rtr(b.qp, gid_of(a.ctx), a.qp->qp_num) == 0);
    to_rts(a.qp);
    to_rts(b.qp);
}

// Polls until one completion arrives (or 10 s pass).
ibv_wc wait_wc(ibv_cq* cq)
{
    ibv_wc wc{};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        REQUIRE(n >= 0);
        if (n == 1) {
            return wc;
        }
    }
    std::fprintf(stderr, "no completion within 10 s\n");
    std::exit(1);
}

void fill(std::vector<uint8_t>& v, size_t off, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; ++i) {
        v[off + i] = uint8_t(seed + i * 7);
    }
}

bool same(const uint8_t* a, const uint8_t* b, size_t n) { return std::memcmp(a, b, n) == 0; }

int post_send(side& s, ibv_wr_opcode op, const std::vector<ibv_sge>& sges, uint64_t wr_id,
              unsigned flags, uint64_t raddr = 0, uint32_t rkey = 0, uint32_t imm = 0)
{
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = const_cast<ibv_sge*>(sges.data());
    wr.num_sge = int(sges.size());
    wr.send_flags = flags;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    wr.imm_data = htonl(imm);
    return ibv_post_send(s.qp, &wr, &bad);
}

int post_recv(side& s, const std::vector<ibv_sge>& sges, uint64_t wr_id)
{
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = const_cast<ibv_sge*>(sges.data());
    wr.num_sge = int(sges.size());
    return ibv_post_recv(s.qp, &wr, &bad);
}

ibv_sge sg(side& s, size_t off, uint32_t len)
{
    return ibv_sge{reinterpret_cast<uintptr_t>(s.buf.data() + off), len, s.mr->lkey};
}

void close_side(side& s)
{
    CHECK(ibv_destroy_qp(s.qp) == 0);
    CHECK(ibv_dereg_mr(s.mr) == 0);
    CHECK(ibv_destroy_cq(s.cq) == 0);
    CHECK(ibv_dealloc_pd(s.pd) == 0);
}

// The data path between a and b, bytes compared after every transfer.
void exercise(side& a, side& b)
{
    const size_t big = 300 * 1024; // several packets at any MTU
    // WRITE a[0..big) -> b[0..big), signaled.
    fill(a.buf, 0, big, 1);
    REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, big)}, 11, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(b.buf.data()), b.mr->rkey) == 0);
    ibv_wc wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 11 && wc.opcode == IBV_WC_RDMA_WRITE);
    CHECK(same(a.buf.data(), b.buf.data(), big));

    // SEND with immediate, gathered from two pieces, scattered into two pieces.
    const size_t s1 = 5000, s2 = 3000, off = big;
    fill(a.buf, off, s1 + s2, 9);
    REQUIRE(post_recv(b, {sg(b, off, 4096), sg(b, off + 4096 + 100, 8000)}, 21) == 0);
    REQUIRE(post_send(a, IBV_WR_SEND_WITH_IMM, {sg(a, off, s1), sg(a, off + s1, s2)}, 12,
                      IBV_SEND_SIGNALED, 0, 0, 0xabcd1234) == 0);
    wc = wait_wc(b.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 21 && wc.opcode == IBV_WC_RECV);
    CHECK(wc.byte_len == s1 + s2 && (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xabcd1234);
    CHECK(wc.qp_num == b.qp->qp_num && wc.src_qp == a.qp->qp_num);
    CHECK(same(a.buf.data() + off, b.buf.data() + off, 4096));
    CHECK(same(a.buf.data() + off + 4096, b.buf.data() + off + 4096 + 100, s1 + s2 - 4096));
    wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 12 && wc.opcode == IBV_WC_SEND);

    // READ b -> a, then a fenced SEND: the send waits for the READ.
    const size_t roff = big + 20000;
    fill(b.buf, roff, 70000, 33);
    REQUIRE(post_recv(b, {sg(b, roff + 80000, 64)}, 22) == 0);
    REQUIRE(post_send(a, IBV_WR_RDMA_READ, {sg(a, roff, 70000)}, 13, 0,
                      reinterpret_cast<uintptr_t>(b.buf.data() + roff), b.mr->rkey) == 0);
    REQUIRE(post_send(a, IBV_WR_SEND, {sg(a, roff, 64)}, 14, IBV_SEND_SIGNALED | IBV_SEND_FENCE) == 0);
    wc = wait_wc(a.cq); // the unsignaled READ reports nothing: the SEND comes first
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 14);
    CHECK(same(a.buf.data() + roff, b.buf.data() + roff, 70000));
    wc = wait_wc(b.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 22 && wc.byte_len == 64);
    CHECK(same(b.buf.data() + roff, b.buf.data() + roff + 80000, 64)); // the READ landed first

    // Inline SEND from a stack buffer that is overwritten right after posting.
    if (a.qp->qp_type == IBV_QPT_RC) {
        char msg[48] = {};
        std::snprintf(msg, sizeof msg, "inline bytes over metaroce");
        const size_t ioff = big + 200000;
        REQUIRE(post_recv(b, {sg(b, ioff, 64)}, 23) == 0);
        const ibv_sge isg{reinterpret_cast<uintptr_t>(msg), 40, 0};
        const int r = post_send(a, IBV_WR_SEND, {isg}, 15, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
        std::memset(msg, 'x', sizeof msg);
        if (r == 0) {
            wc = wait_wc(b.cq);
            CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 40);
            CHECK(std::strcmp(reinterpret_cast<char*>(b.buf.data() + ioff), "inline bytes over metaroce") == 0);
            wc = wait_wc(a.cq);
            CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 15);
        } else {
            CHECK(r == 0);
        }
    }

    // 32 unsignaled WRITEs then a signaled one: one completion, every byte there.
    const size_t woff = big + 210000;
    fill(a.buf, woff, 32 * 1024, 77);
    for (int i = 0; i < 32; ++i) {
        REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, woff + i * 1024, 1024)}, 100 + i, 0,
                          reinterpret_cast<uintptr_t>(b.buf.data() + woff + i * 1024), b.mr->rkey) == 0);
    }
    REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, woff, 8)}, 200, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(b.buf.data() + woff), b.mr->rkey) == 0);
    wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 200);
    CHECK(same(a.buf.data() + woff, b.buf.data() + woff, 32 * 1024));
    ibv_wc extra;
    CHECK(ibv_poll_cq(a.cq, 1, &extra) == 0);

    // A WRITE to a key the peer does not have fails with a remote access error.
    REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 16)}, 300, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(b.buf.data()), b.mr->rkey ^ 0x5a5a0000) == 0);
    wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 300);
}

int mode_loopback()
{
    ibv_context* ctx = open_metaroce();
    side a = make_side(ctx, 1 << 20, nullptr, 64);
    // b shares a's device: QPs of one device connected to each other.
    side b = make_side(ctx, 1 << 20, nullptr, 64);
    connect_pair(a, b);
    exercise(a, b);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR);
    close_side(a);
    close_side(b);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

int mode_shared()
{
    // Two nodes in one process: each context reads METAROCE_ADDR when it opens.
    const char* base = std::getenv("VERBS_CHECK_NET"); // e.g. "127.9.31"
    const std::string net = base != nullptr ? base : "127.9.31";
    setenv("METAROCE_ADDR", (net + ".1").c_str(), 1);
    ibv_context* c1 = open_metaroce();
    setenv("METAROCE_ADDR", (net + ".2").c_str(), 1);
    ibv_context* c2 = open_metaroce();
    side a1 = make_side(c1, 1 << 20), b1 = make_side(c2, 1 << 20);
    side a2 = make_side(c1, 1 << 20), b2 = make_side(c2, 1 << 20);
    connect_pair(a1, b1);
    connect_pair(a2, b2);
    for (auto* p : {&a1, &a2}) {
        side& a = *p;
        side& b = p == &a1 ? b1 : b2;
        fill(a.buf, 0, 100000, uint8_t(p == &a1 ? 5 : 6));
        REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 100000)}, 1, IBV_SEND_SIGNALED,
                          reinterpret_cast<uintptr_t>(b.buf.data()), b.mr->rkey) == 0);
        const ibv_wc wc = wait_wc(a.cq);
        CHECK(wc.status == IBV_WC_SUCCESS);
        CHECK(same(a.buf.data(), b.buf.data(), 100000));
        REQUIRE(post_recv(a, {sg(a, 200000, 100)}, 2) == 0);
        REQUIRE(post_send(b, IBV_WR_SEND, {sg(b, 0, 100)}, 3, IBV_SEND_SIGNALED) == 0);
        CHECK(wait_wc(a.cq).status == IBV_WC_SUCCESS);
        CHECK(wait_wc(b.cq).status == IBV_WC_SUCCESS);
        CHECK(same(a.buf.data() + 200000, b.buf.data(), 100));
    }
    std::printf("shared: %u and %u -> %u and %u\n", a1.qp->qp_num, a2.qp->qp_num,
                b1.qp->qp_num, b2.qp->qp_num);
    for (auto* s : {&a1, &a2, &b1, &b2}) {
        close_side(*s);
    }
    CHECK(ibv_close_device(c1) == 0);
    CHECK(ibv_close_device(c2) == 0);
    return failures;
}

// Heap bytes of the front end and the core: per connection and per extra QP (printed
// for the report; checked only for staying flat as QPs are added).
int mode_footprint()
{
    auto heap = [] { return size_t(mallinfo2().uordblks); };
    setenv("METAROCE_ADDR", "127.9.35.1", 1);
    ibv_context* c1 = open_metaroce();
    setenv("METAROCE_ADDR", "127.9.35.2", 1);
    ibv_context* c2 = open_metaroce();
    std::vector<side> as, bs;
    as.reserve(9);
    bs.reserve(9);
    // Sides first (QPs, CQs, MRs of 4 KiB), then connections, so the connection and
    // binding cost is measured apart from the application's objects.
    for (int i = 0; i < 9; ++i) {
        as.push_back(make_side(c1, 4096));
        bs.push_back(make_side(c2, 4096));
    }
    const size_t h0 = heap();
    connect_pair(as[0], bs[0]);
    REQUIRE(post_send(as[0], IBV_WR_RDMA_WRITE, {sg(as[0], 0, 64)}, 1, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(bs[0].buf.data()), bs[0].mr->rkey) == 0);
    CHECK(wait_wc(as[0].cq).status == IBV_WC_SUCCESS);
    const size_t h1 = heap();
    for (int i = 1; i < 9; ++i) {
        connect_pair(as[size_t(i)], bs[size_t(i)]);
        REQUIRE(post_send(as[size_t(i)], IBV_WR_RDMA_WRITE, {sg(as[size_t(i)], 0, 64)}, 1,
                          IBV_SEND_SIGNALED, reinterpret_cast<uintptr_t>(bs[size_t(i)].buf.data()),
                          bs[size_t(i)].mr->rkey) == 0);
        CHECK(wait_wc(as[size_t(i)].cq).status == IBV_WC_SUCCESS);
    }
    const size_t h9 = heap();
    // Both nodes live in this process: halve for one node.
    const double per_conn = double(h1 - h0) / 2;
    const double per_qp = double(h9 > h1 ? h9 - h1 : 0) / 2 / 8;
    ibv_qp_init_attr qi{};
    ibv_qp_attr qa{};
    ibv_query_qp(as[0].qp, &qa, 0, &qi);
    std::printf("footprint: connection + first QP binding %.0f bytes per node; each further QP on it "
                "%.0f bytes per node (QPs of %u send / %u receive entries, created beforehand)\n",
                per_conn, per_qp, qi.cap.max_send_wr, qi.cap.max_recv_wr);
    CHECK(per_qp < 4096); // flat: a QP adds a stream binding, not connection state
    for (size_t i = 0; i < as.size(); ++i) {
        close_side(as[i]);
        close_side(bs[i]);
    }
    CHECK(ibv_close_device(c1) == 0);
    CHECK(ibv_close_device(c2) == 0);
    return failures;
}

// The extended API: a CQ_EX polled with start/next/end_poll, a QP made with
// ibv_create_qp_ex and fed through ibv_wr_* (WRITE, SEND with immediate, inline).
int mode_extended()
{
    ibv_context* ctx = open_metaroce();
    side b = make_side(ctx, 1 << 16);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 64;
    ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
    ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &ca);
    REQUIRE(cqx != nullptr);
    ibv_qp_init_attr_ex qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.send_cq = ibv_cq_ex_to_cq(cqx);
    qa.recv_cq = ibv_cq_ex_to_cq(cqx);
    qa.cap.max_send_wr = 16;
    qa.cap.max_recv_wr = 16;
    qa.cap.max_send_sge = 2;
    qa.cap.max_recv_sge = 1;
    qa.cap.max_inline_data = 64;
    qa.pd = pd;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND;
    ibv_qp* qp = ibv_create_qp_ex(ctx, &qa);
    REQUIRE(qp != nullptr);
    ibv_qp_ex* qx = ibv_qp_to_qp_ex(qp);
    REQUIRE(qx != nullptr);
    CHECK(ibv_qp_to_qp_ex(b.qp) == nullptr); // made without send_ops_flags
    std::vector<uint8_t> mem(1 << 16);
    ibv_mr* mr = ibv_reg_mr(pd, mem.data(), mem.size(), int(IBV_ACCESS_LOCAL_WRITE));
    REQUIRE(mr != nullptr);
    side a;
    a.ctx = ctx;
    a.qp = qp;
    connect_pair(a, b);

    fill(mem, 0, 20000, 3);
    REQUIRE(post_recv(b, {sg(b, 30000, 64)}, 5) == 0);
    ibv_wr_start(qx);
    qx->wr_id = 1;
    qx->wr_flags = 0;
    ibv_wr_rdma_write(qx, b.mr->rkey, reinterpret_cast<uintptr_t>(b.buf.data()));
    const ibv_sge two[2] = {{reinterpret_cast<uintptr_t>(mem.data()), 12000, mr->lkey},
                            {reinterpret_cast<uintptr_t>(mem.data() + 12000), 8000, mr->lkey}};
    ibv_wr_set_sge_list(qx, 2, two);
    qx->wr_id = 2;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send_imm(qx, htonl(77));
    char msg[32] = "via ibv_wr_set_inline_data";
    ibv_wr_set_inline_data(qx, msg, sizeof msg);
    REQUIRE(ibv_wr_complete(qx) == 0);
    std::memset(msg, 0, sizeof msg);

    // One signaled completion (the SEND) on the CQ_EX.
    ibv_poll_cq_attr pa{};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int r;
    while ((r = ibv_start_poll(cqx, &pa)) == ENOENT && std::chrono::steady_clock::now() < until) {
    }
    REQUIRE(r == 0);
    CHECK(cqx->status == IBV_WC_SUCCESS && cqx->wr_id == 2);
    CHECK(ibv_wc_read_opcode(cqx) == IBV_WC_SEND && ibv_wc_read_qp_num(cqx) == qp->qp_num);
    CHECK(ibv_next_poll(cqx) == ENOENT);
    ibv_end_poll(cqx);
    ibv_wc wc = wait_wc(b.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 32 && ntohl(wc.imm_data) == 77);
    CHECK(std::strcmp(reinterpret_cast<char*>(b.buf.data() + 30000), "via ibv_wr_set_inline_data") == 0);
    CHECK(same(mem.data(), b.buf.data(), 20000)); // the WRITE landed before the SEND
    // A batch with an unsupported operation is refused whole.
    ibv_wr_start(qx);
    qx->wr_id = 3;
    ibv_wr_atomic_fetch_add(qx, b.mr->rkey, reinterpret_cast<uintptr_t>(b.buf.data()), 1);
    CHECK(ibv_wr_complete(qx) != 0);

    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    close_side(b);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

int mode_channel()
{
    ibv_context* ctx = open_metaroce();
    ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
    ibv_comp_channel* bch = ibv_create_comp_channel(ctx);
    REQUIRE(ch != nullptr && ch->fd >= 0 && bch != nullptr);
    side a = make_side(ctx, 1 << 16, ch), b = make_side(ctx, 1 << 16, bch);
    connect_pair(a, b);
    {
        // Armed for solicited completions only: a plain SEND's receive does not wake,
        // a solicited one does.
        pollfd bpfd{bch->fd, POLLIN, 0};
        CHECK(ibv_req_notify_cq(b.cq, 1) == 0);
        REQUIRE(post_recv(b, {sg(b, 0, 256)}, 70) == 0);
        REQUIRE(post_recv(b, {sg(b, 256, 256)}, 71) == 0);
        REQUIRE(post_send(a, IBV_WR_SEND, {sg(a, 0, 64)}, 60, IBV_SEND_SIGNALED) == 0);
        CHECK(wait_wc(a.cq).wr_id == 60);
        CHECK(wait_wc(b.cq).wr_id == 70);
        CHECK(poll(&bpfd, 1, 100) == 0); // not solicited: no event
        REQUIRE(post_send(a, IBV_WR_SEND, {sg(a, 0, 64)}, 61, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED) == 0);
        CHECK(wait_wc(a.cq).wr_id == 61);
        CHECK(poll(&bpfd, 1, 10000) == 1);
        ibv_cq* bcq = nullptr;
        void* bctx = nullptr;
        REQUIRE(ibv_get_cq_event(bch, &bcq, &bctx) == 0);
        CHECK(bcq == b.cq);
        CHECK(wait_wc(b.cq).wr_id == 71);
        ibv_ack_cq_events(b.cq, 1);
    }
    CHECK(ibv_destroy_comp_channel(ch) != 0); // a CQ still uses it
    const int fl = fcntl(ch->fd, F_GETFL);
    REQUIRE(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) == 0);
    ibv_cq* ecq = nullptr;
    void* ectx = nullptr;
    CHECK(ibv_get_cq_event(ch, &ecq, &ectx) == -1 && errno == EAGAIN); // nothing armed yet
    int events = 0;
    for (int round = 0; round < 3; ++round) {
        CHECK(ibv_req_notify_cq(a.cq, 0) == 0);
        REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 4096)}, uint64_t(round), IBV_SEND_SIGNALED,
                          reinterpret_cast<uintptr_t>(b.buf.data()), b.mr->rkey) == 0);
        pollfd pfd{ch->fd, POLLIN, 0};
        CHECK(poll(&pfd, 1, 10000) == 1);
        REQUIRE(ibv_get_cq_event(ch, &ecq, &ectx) == 0);
        CHECK(ecq == a.cq);
        ++events;
        ibv_wc wc;
        CHECK(ibv_poll_cq(a.cq, 1, &wc) == 1 && wc.wr_id == uint64_t(round));
        // Not re-armed: the next completion must not write another event.
        REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 16)}, 50, IBV_SEND_SIGNALED,
                          reinterpret_cast<uintptr_t>(b.buf.data()), b.mr->rkey) == 0);
        wc = wait_wc(a.cq);
        CHECK(wc.wr_id == 50);
        CHECK(poll(&pfd, 1, 50) == 0); // one-shot
    }
    ibv_ack_cq_events(a.cq, unsigned(events));
    close_side(a); // returns: every event was acknowledged
    close_side(b);
    CHECK(ibv_destroy_comp_channel(ch) == 0);
    CHECK(ibv_destroy_comp_channel(bch) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

int mode_modify()
{
    ibv_context* ctx = open_metaroce();
    side a = make_side(ctx, 1 << 16), b = make_side(ctx, 1 << 16);
    ibv_qp_attr at{};
    ibv_qp_init_attr init{};
    // RESET -> RTR is not a transition; RESET -> INIT without PORT is incomplete.
    at.qp_state = IBV_QPS_RTR;
    CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE) == EINVAL);
    at = {};
    at.qp_state = IBV_QPS_INIT;
    CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS) == EINVAL);
    // An attribute INIT does not take (SQ_PSN) is refused too.
    at.port_num = 1;
    CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                       IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN) == EINVAL);
    CHECK(ibv_query_qp(a.qp, &at, IBV_QP_STATE, &init) == 0 && at.qp_state == IBV_QPS_RESET);
    to_init(a.qp);
    to_init(b.qp);
    CHECK(ibv_query_qp(a.qp, &at, IBV_QP_STATE, &init) == 0 && at.qp_state == IBV_QPS_INIT);
    CHECK(init.cap.max_send_wr >= 64 && init.send_cq == a.cq);
    // Posting a send before RTS is refused; receives are accepted in INIT.
    CHECK(post_send(a, IBV_WR_SEND, {sg(a, 0, 8)}, 1, IBV_SEND_SIGNALED) == EINVAL);
    CHECK(post_recv(a, {sg(a, 0, 64)}, 7) == 0);
    CHECK(post_recv(a, {sg(a, 64, 64)}, 8) == 0);
    // RTR without a GRH is refused on RoCE; with one it works.
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTR;
    r.path_mtu = IBV_MTU_1024;
    r.dest_qp_num = b.qp->qp_num;
    r.max_dest_rd_atomic = 1;
    r.min_rnr_timer = 12;
    r.ah_attr.port_num = 1;
    CHECK(ibv_modify_qp(a.qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                      IBV_QP_MIN_RNR_TIMER) == EINVAL);
    CHECK(to_rtr(a.qp, gid_of(ctx), b.qp->qp_num) == 0);
    REQUIRE(to_rtr(b.qp, gid_of(ctx), a.qp->qp_num) == 0);
    // RTR -> RTS without TIMEOUT is incomplete.
    at = {};
    at.qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL);
    to_rts(a.qp);
    to_rts(b.qp);
    CHECK(ibv_query_qp(a.qp, &at, IBV_QP_STATE, &init) == 0 && at.qp_state == IBV_QPS_RTS &&
          at.dest_qp_num == b.qp->qp_num && at.timeout == 14);
    // One receive is used by a SEND, the other is flushed when a moves to ERR.
    REQUIRE(post_send(b, IBV_WR_SEND, {sg(b, 0, 32)}, 9, IBV_SEND_SIGNALED) == 0);
    ibv_wc wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 7);
    at = {};
    at.qp_state = IBV_QPS_ERR;
    CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE) == 0);
    wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 8);
    // Posting in ERR completes at once with a flush.
    CHECK(post_send(a, IBV_WR_SEND, {sg(a, 0, 8)}, 10, 0) == 0);
    wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 10);
    // ERR -> RESET -> INIT again.
    at.qp_state = IBV_QPS_RESET;
    CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE) == 0);
    to_init(a.qp);
    CHECK(ibv_query_qp(a.qp, &at, IBV_QP_STATE, &init) == 0 && at.qp_state == IBV_QPS_INIT);
    close_side(a);
    close_side(b);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

int mode_contexts()
{
    ibv_context* c1 = open_metaroce();
    ibv_context* c2 = open_metaroce();
    REQUIRE(c1 != c2);
    const ibv_gid g1 = gid_of(c1), g2 = gid_of(c2);
    CHECK(std::memcmp(g1.raw, g2.raw, sizeof g1.raw) == 0);
    side a = make_side(c1, 1 << 20, nullptr, 64), b = make_side(c2, 1 << 20, nullptr, 64);
    connect_pair(a, b);
    exercise(a, b);
    close_side(a);
    CHECK(ibv_close_device(c1) == 0); // the node stays for c2
    close_side(b);
    CHECK(ibv_close_device(c2) == 0);
    ibv_context* c3 = open_metaroce(); // and opens again once both are gone
    CHECK(ibv_close_device(c3) == 0);
    return failures;
}

int mode_refusals()
{
    ibv_context* ctx = open_metaroce();
    ibv_device_attr da{};
    REQUIRE(ibv_query_device(ctx, &da) == 0);
    CHECK(da.vendor_id != 0);
    errno = 0;
    CHECK(ibv_create_cq(ctx, 16, nullptr, nullptr, ctx->num_comp_vectors) == nullptr && errno == EINVAL);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, ctx->num_comp_vectors - 1);
    CHECK(cq != nullptr);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    REQUIRE(pd != nullptr);
    ibv_ah_attr ah{};
    ah.port_num = 1;
    errno = 0;
    CHECK(ibv_create_ah(pd, &ah) == nullptr && errno == EINVAL); // no GRH
    ah.is_global = 1;
    ah.grh.dgid = gid_of(ctx);
    ah.grh.hop_limit = 1;
    ibv_ah* good = ibv_create_ah(pd, &ah);
    CHECK(good != nullptr);
    ibv_gid_entry entries[1];
    CHECK(ibv_query_gid_table(ctx, entries, 0, 0) == -EINVAL);
    CHECK(ibv_query_gid_table(ctx, entries, 1, 0) == 1 && entries[0].gid_type == IBV_GID_TYPE_ROCE_V2);
    std::vector<uint8_t> buf(4096);
    ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(mr != nullptr);
    // Reregistration: refused inputs change nothing; accepted ones keep both keys.
    const uint32_t lkey = mr->lkey, rkey = mr->rkey;
    auto refused = [&](int flags, ibv_pd* p, void* addr, size_t len, int access, int err) {
        errno = 0;
        return ibv_rereg_mr(mr, flags, p, addr, len, access) == IBV_REREG_MR_ERR_INPUT && errno == err;
    };
    CHECK(refused(IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_REMOTE_WRITE, EINVAL)); // no local write
    CHECK(refused(0, nullptr, nullptr, 0, 0, EINVAL));
    CHECK(refused(1 << 7, nullptr, nullptr, 0, 0, EINVAL));
    CHECK(refused(IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr, 64, 0, EINVAL));
    CHECK(refused(IBV_REREG_MR_CHANGE_PD, pd, nullptr, 0, 0, EOPNOTSUPP)); // no PD per region in the core
    CHECK(mr->addr == buf.data() && mr->length == buf.size());
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) == 0);
    std::vector<uint8_t> other(8192);
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, other.data(), other.size(), 0) == 0);
    CHECK(mr->addr == other.data() && mr->length == other.size() && mr->lkey == lkey && mr->rkey == rkey);
    CHECK(ibv_dereg_mr(mr) == 0);
    if (good != nullptr) {
        CHECK(ibv_destroy_ah(good) == 0);
    }
    if (cq != nullptr) {
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

int mode_srq()
{
    constexpr int k_qps = 4;
    constexpr size_t k_msg = 1000;
    ibv_context* ctx = open_metaroce();
    side server = make_side(ctx, k_qps * 64 * k_msg);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 256;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(server.pd, &sa);
    REQUIRE(srq != nullptr);
    CHECK(ibv_destroy_qp(server.qp) == 0);
    ibv_qp* sq[k_qps];
    side client[k_qps];
    for (int i = 0; i < k_qps; ++i) {
        ibv_qp_init_attr a{};
        a.send_cq = server.cq;
        a.recv_cq = server.cq;
        a.srq = srq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = 16;
        a.cap.max_send_sge = 1;
        sq[i] = ibv_create_qp(server.pd, &a);
        REQUIRE(sq[i] != nullptr);
        client[i] = make_side(ctx, k_msg);
        server.qp = sq[i];
        connect_pair(client[i], server);
    }
    // One receive at a time, the SENDs on each QP in turn: a receive handed to one QP
    // must reach the QP whose SEND comes next.
    for (int m = 0; m < 8 * k_qps; ++m) {
        const int i = m % k_qps;
        const size_t off = size_t(m) * k_msg;
        ibv_sge rs = sg(server, off, uint32_t(k_msg));
        ibv_recv_wr rw{};
        ibv_recv_wr* bad = nullptr;
        rw.wr_id = 1000 + uint64_t(m);
        rw.sg_list = &rs;
        rw.num_sge = 1;
        REQUIRE(ibv_post_srq_recv(srq, &rw, &bad) == 0);
        fill(client[i].buf, 0, k_msg, uint8_t(m));
        REQUIRE(post_send(client[i], IBV_WR_SEND, {sg(client[i], 0, uint32_t(k_msg))}, uint64_t(m),
                          IBV_SEND_SIGNALED) == 0);
        const ibv_wc wc = wait_wc(server.cq);
        CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1000 + uint64_t(m) && wc.byte_len == k_msg);
        CHECK(wc.qp_num == sq[i]->qp_num);
        CHECK(same(server.buf.data() + off, client[i].buf.data(), k_msg));
        const ibv_wc sw = wait_wc(client[i].cq);
        CHECK(sw.status == IBV_WC_SUCCESS && sw.wr_id == uint64_t(m));
    }
    for (int i = 0; i < k_qps; ++i) {
        CHECK(ibv_destroy_qp(sq[i]) == 0);
        close_side(client[i]);
    }
    CHECK(ibv_destroy_srq(srq) == 0);
    CHECK(ibv_dereg_mr(server.mr) == 0);
    CHECK(ibv_destroy_cq(server.cq) == 0);
    CHECK(ibv_dealloc_pd(server.pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

int mode_deadpeer(const char* peer_addr)
{
    ibv_context* ctx = open_metaroce();
    side a = make_side(ctx, 1 << 16);
    to_init(a.qp);
    REQUIRE(to_rtr(a.qp, gid_of_addr(peer_addr), 0x1234) == 0);
    to_rts(a.qp, 14, 3);
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 64)}, 1, IBV_SEND_SIGNALED, 0x1000, 1) == 0);
    REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 64)}, 2, IBV_SEND_SIGNALED, 0x1000, 1) == 0);
    ibv_wc wc = wait_wc(a.cq);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("deadpeer %s: status %s after %.2f s\n", peer_addr, ibv_wc_status_str(wc.status), s);
    CHECK(wc.status == IBV_WC_RETRY_EXC_ERR && wc.wr_id == 1);
    wc = wait_wc(a.cq);
    CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2);
    ibv_qp_attr at{};
    ibv_qp_init_attr init{};
    CHECK(ibv_query_qp(a.qp, &at, IBV_QP_STATE, &init) == 0 && at.qp_state == IBV_QPS_ERR);
    // The failure is also an asynchronous QP_FATAL event on the context's async fd.
    pollfd pfd{ctx->async_fd, POLLIN, 0};
    CHECK(poll(&pfd, 1, 5000) == 1);
    ibv_async_event ev{};
    CHECK(ibv_get_async_event(ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == a.qp);
    ibv_ack_async_event(&ev);
    close_side(a);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

// A busy host or hypervisor can stop a process for longer than a QP's retry budget.
// An RC requester counts retries, so such a stop costs it one: here a send waits for
// its peer QP's binding while the process is stopped for 1 s (4 periods of 67 ms
// allowed), and the peer QP binds 20 ms after the process runs again.
int mode_stall()
{
    ibv_context* ctx = open_metaroce();
    side a = make_side(ctx, 1 << 12);
    side b = make_side(ctx, 1 << 12);
    to_init(a.qp);
    to_init(b.qp);
    REQUIRE(to_rtr(a.qp, gid_of(ctx), b.qp->qp_num) == 0);
    to_rts(a.qp, 14, 3);
    fill(a.buf, 0, 512, 9);
    REQUIRE(post_send(a, IBV_WR_RDMA_WRITE, {sg(a, 0, 512)}, 1, IBV_SEND_SIGNALED,
                      reinterpret_cast<uintptr_t>(b.buf.data()) + 1024, b.mr->rkey) == 0);
    const pid_t self = getpid();
    const pid_t waker = fork();
    REQUIRE(waker >= 0);
    if (waker == 0) {
        usleep(1'000'000);
        kill(self, SIGCONT);
        _exit(0);
    }
    raise(SIGSTOP);
    REQUIRE(waitpid(waker, nullptr, 0) == waker);
    usleep(20'000);
    REQUIRE(to_rtr(b.qp, gid_of(ctx), a.qp->qp_num) == 0);
    to_rts(b.qp);
    const ibv_wc wc = wait_wc(a.cq);
    std::printf("stall: after the stop the WRITE completed with %s\n", ibv_wc_status_str(wc.status));
    CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1);
    CHECK(same(a.buf.data(), b.buf.data() + 1024, 512));
    close_side(a);
    close_side(b);
    CHECK(ibv_close_device(ctx) == 0);
    return failures;
}

// A peer whose node is not up yet (a process that starts late or was stopped) is
// connected to for as long as a QP's budget, not given up on after the core's default.
int mode_latepeer()
{
    const char* base = std::getenv("VERBS_CHECK_NET");
    const std::string net = base != nullptr ? base : "127.9.38";
    setenv("METAROCE_ADDR", (net + ".1").c_str(), 1);
    ibv_context* c1 = open_metaroce();
    side a = make_side(c1, 1 << 12);
    // The peer's first QP gets the number every node gives its first QP (the same as ours).
    to_init(a.qp);
    REQUIRE(to_rtr(a.qp, gid_of_addr((net + ".2").c_str()), a.qp->qp_num) == 0);
    to_rts(a.qp);
    fill(a.buf, 0, 300, 3);
    REQUIRE(post_send(a, IBV_WR_SEND, {sg(a, 0, 300)}, 1, IBV_SEND_SIGNALED) == 0);
    usleep(350'000);
    setenv("METAROCE_ADDR", (net + ".2").c_str(), 1);
    ibv_context* c2 = open_metaroce();
    side b = make_side(c2, 1 << 12);
    REQUIRE(b.qp->qp_num == a.qp->qp_num);
    to_init(b.qp);
    REQUIRE(post_recv(b, {sg(b, 1000, 300)}, 2) == 0);
    REQUIRE(to_rtr(b.qp, gid_of(c1), a.qp->qp_num) == 0);
    to_rts(b.qp);
    const ibv_wc wa = wait_wc(a.cq);
    std::printf("latepeer: the SEND completed with %s\n", ibv_wc_status_str(wa.status));
    CHECK(wa.status == IBV_WC_SUCCESS && wa.wr_id == 1);
    if (wa.status == IBV_WC_SUCCESS) {
        const ibv_wc wb = wait_wc(b.cq);
        CHECK(wb.status == IBV_WC_SUCCESS && wb.wr_id == 2 && wb.byte_len == 300);
        CHECK(same(a.buf.data(), b.buf.data() + 1000, 300));
    }
    close_side(a);
    close_side(b);
    CHECK(ibv_close_device(c2) == 0);
    CHECK(ibv_close_device(c1) == 0);
    return failures;
}

} // namespace

int main(int argc, char** argv)
{
    const std::string mode = argc > 1 ? argv[1] : "";
    int r = 2;
    if (mode == "loopback") {
        r = mode_loopback();
    } else if (mode == "shared") {
        r = mode_shared();
    } else if (mode == "extended") {
        r = mode_extended();
    } else if (mode == "footprint") {
        r = mode_footprint();
    } else if (mode == "channel") {
        r = mode_channel();
    } else if (mode == "modify") {
        r = mode_modify();
    } else if (mode == "deadpeer" && argc > 2) {
        r = mode_deadpeer(argv[2]);
    } else if (mode == "contexts") {
        return mode_contexts();
    } else if (mode == "refusals") {
        return mode_refusals();
    } else if (mode == "srq") {
        return mode_srq();
    } else if (mode == "stall") {
        r = mode_stall();
    } else if (mode == "latepeer") {
        r = mode_latepeer();
    } else {
        std::fprintf(stderr, "usage: verbs_check loopback|shared|footprint|extended|channel|modify|stall|latepeer|deadpeer ADDR\n");
        return 2;
    }
    std::printf("%s: %s\n", mode.c_str(), r == 0 ? "ok" : "FAILED");
    return r == 0 ? 0 : 1;
}
