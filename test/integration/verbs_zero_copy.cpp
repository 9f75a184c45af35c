// A plain libibverbs program (one RC QP each side) that verbs_zero_copy.sh runs on both
// ends of a net_memif link over metaroce's DPDK backend:
//   verbs_zero_copy server|client DIR
// Queue pair numbers, GIDs and the server's buffer are exchanged through files in DIR.
// Phase 1: the client WRITEs (with immediate) 4 MiB of a pattern from a region of plain
// application memory; the server checks every byte. Phase 2 (the script stops the
// server in between, so the link takes no more frames): the client WRITEs again and
// deregisters the region while the port still holds frames sent from it in place:
// ibv_dereg_mr must wait, then fail with EBUSY; once the script resumes the server and
// the port frees them, it must succeed.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

constexpr size_t k_len = 4u << 20;

[[noreturn]] void die(const char* what)
{
    std::fprintf(stderr, "FAIL: %s (errno %d %s)\n", what, errno, std::strerror(errno));
    std::exit(1);
}

struct info {
    uint32_t qpn = 0;
    uint32_t rkey = 0;
    uint64_t addr = 0;
    ibv_gid gid{};
};

void put(const std::string& path, const std::string& text)
{
    std::ofstream(path + ".tmp") << text;
    std::rename((path + ".tmp").c_str(), path.c_str()); // readers never see half a file
}

bool wait_file(const std::string& path, int seconds)
{
    for (int i = 0; i < seconds * 100; ++i) {
        if (std::ifstream(path)) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

void publish(const std::string& path, const info& me)
{
    std::string g;
    char b[3];
    for (uint8_t v : me.gid.raw) {
        std::snprintf(b, sizeof b, "%02x", v);
        g += b;
    }
    put(path, std::to_string(me.qpn) + " " + std::to_string(me.rkey) + " " + std::to_string(me.addr) + " " + g + "\n");
}

info fetch(const std::string& path)
{
    if (!wait_file(path, 30)) {
        die(("no peer information in " + path).c_str());
    }
    std::ifstream in(path);
    info p;
    std::string g;
    in >> p.qpn >> p.rkey >> p.addr >> g;
    for (size_t i = 0; i < 16 && 2 * i + 1 < g.size(); ++i) {
        p.gid.raw[i] = uint8_t(std::stoul(g.substr(2 * i, 2), nullptr, 16));
    }
    return p;
}

uint8_t pattern(size_t i, unsigned round) { return uint8_t((i * 7 + 13 + round * 101) ^ (i >> 9)); }

// Waits up to `seconds` for one completion.
ibv_wc wait_wc(ibv_cq* cq, int seconds)
{
    ibv_wc wc{};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (;;) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0) {
            die("ibv_poll_cq");
        }
        if (n == 1) {
            return wc;
        }
        if (std::chrono::steady_clock::now() > until) {
            die("no completion in time");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

void connect_qp(ibv_qp* qp, const info& peer, ibv_mtu mtu)
{
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        die("INIT");
    }
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = peer.qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer.gid;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        die("RTR");
    }
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        die("RTS");
    }
}

void post_write(ibv_qp* qp, ibv_mr* mr, const info& peer, bool imm, uint64_t id)
{
    ibv_sge s{reinterpret_cast<uintptr_t>(mr->addr), uint32_t(k_len), mr->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr.imm_data = htobe32(0x5a5a);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
    if (ibv_post_send(qp, &wr, &bad) != 0) {
        die("ibv_post_send");
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s server|client DIR\n", argv[0]);
        return 2;
    }
    const bool server = std::string(argv[1]) == "server";
    const std::string dir = argv[2];
    int n = 0;
    ibv_device** devs = ibv_get_device_list(&n);
    ibv_device* dev = nullptr;
    for (int i = 0; i < n; ++i) {
        if (std::string(ibv_get_device_name(devs[i])) == "metaroce0") {
            dev = devs[i];
        }
    }
    if (dev == nullptr) {
        die("no metaroce0 device");
    }
    ibv_context* ctx = ibv_open_device(dev);
    if (ctx == nullptr) {
        die("ibv_open_device");
    }
    ibv_port_attr port{};
    ibv_query_port(ctx, 1, &port);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    ibv_qp_init_attr qa{};
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap = {4, 4, 1, 1, 0};
    ibv_qp* qp = pd != nullptr && cq != nullptr ? ibv_create_qp(pd, &qa) : nullptr;
    // Plain application memory, not DPDK's: the backend registers it for zero copy.
    auto* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, k_len));
    if (qp == nullptr || buf == nullptr) {
        die("PD, CQ, QP or buffer");
    }
    std::memset(buf, 0, k_len);
    ibv_mr* mr = ibv_reg_mr(pd, buf, k_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (mr == nullptr) {
        die("ibv_reg_mr");
    }
    info me;
    me.qpn = qp->qp_num;
    me.rkey = mr->rkey;
    me.addr = reinterpret_cast<uintptr_t>(buf);
    if (ibv_query_gid(ctx, 1, 0, &me.gid) != 0) {
        die("ibv_query_gid");
    }
    put(dir + (server ? "/server.pid" : "/client.pid"), std::to_string(getpid()) + "\n"); // for SIGSTOP
    publish(dir + (server ? "/server.info" : "/client.info"), me);
    const info peer = fetch(dir + (server ? "/client.info" : "/server.info"));

    if (server) {
        connect_qp(qp, peer, port.active_mtu); // the client's RNR retries cover the gap
        ibv_recv_wr rwr{};
        ibv_recv_wr* bad = nullptr;
        rwr.wr_id = 1;
        if (ibv_post_recv(qp, &rwr, &bad) != 0) {
            die("ibv_post_recv");
        }
        const ibv_wc wc = wait_wc(cq, 30);
        if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
            std::fprintf(stderr, "FAIL: receive completion status %d opcode %d\n", wc.status, wc.opcode);
            return 1;
        }
        for (size_t i = 0; i < k_len; ++i) {
            if (buf[i] != pattern(i, 1)) {
                std::fprintf(stderr, "FAIL: byte %zu is %u, sent %u\n", i, buf[i], pattern(i, 1));
                return 1;
            }
        }
        std::printf("server: %zu bytes verified\n", k_len);
        std::fflush(stdout);
        put(dir + "/verified", "1\n");
        // Phase 2 is the client's; stay until it is done (the script stops us meanwhile).
        if (!wait_file(dir + "/done", 60)) {
            die("the client never finished");
        }
        ibv_dereg_mr(mr); // the server sent nothing from it
    } else {
        connect_qp(qp, peer, port.active_mtu);
        for (size_t i = 0; i < k_len; ++i) {
            buf[i] = pattern(i, 1);
        }
        post_write(qp, mr, peer, true, 1);
        ibv_wc wc = wait_wc(cq, 30);
        if (wc.status != IBV_WC_SUCCESS) {
            std::fprintf(stderr, "FAIL: write completion status %d\n", wc.status);
            return 1;
        }
        if (!wait_file(dir + "/verified", 30)) {
            die("the server did not verify the bytes");
        }
        std::printf("client: phase 1 written\n");
        // Phase 2: the script stops the server, so the link takes no more frames.
        put(dir + "/ready2", "1\n");
        if (!wait_file(dir + "/go2", 30)) {
            die("no go for phase 2");
        }
        for (size_t i = 0; i < k_len; ++i) {
            buf[i] = pattern(i, 2);
        }
        post_write(qp, mr, peer, false, 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // frames fill the link
        auto t0 = std::chrono::steady_clock::now();
        const int busy = ibv_dereg_mr(mr);
        const long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
        std::printf("client: ibv_dereg_mr with frames held: %d (%s) after %ld ms\n", busy, std::strerror(busy), ms);
        std::fflush(stdout);
        put(dir + "/busy", "1\n"); // the script resumes the server
        if (busy != EBUSY || ms < 900) {
            std::fprintf(stderr, "FAIL: expected EBUSY after waiting about 1 s\n");
            put(dir + "/done", "1\n");
            return 1;
        }
        // The region is still registered: deregistering again waits, and the script
        // resumes the server meanwhile, so the port frees the frames during the wait
        // (on a loaded host perhaps only after it: then EBUSY again, and a retry).
        put(dir + "/dereg2", "1\n");
        int ok = EBUSY;
        long ms2 = 0;
        for (int attempt = 0; attempt < 5 && ok == EBUSY; ++attempt) {
            t0 = std::chrono::steady_clock::now();
            ok = ibv_dereg_mr(mr);
            ms2 = long(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
            std::printf("client: ibv_dereg_mr while the server resumes: %d after %ld ms\n", ok, ms2);
        }
        std::printf("client: ibv_dereg_mr once the link drains: %d after %ld ms\n", ok, ms2);
        std::fflush(stdout);
        put(dir + "/done", "1\n");
        if (ok != 0) {
            std::fprintf(stderr, "FAIL: ibv_dereg_mr after the server resumed: %d\n", ok);
            return 1;
        }
        // The second WRITE's outcome is the transport's (the server was silent for over a
        // second: the connection may have failed); its completion only has to arrive.
        wc = wait_wc(cq, 30);
        std::printf("client: phase 2 write completed with status %d\n", wc.status);
    }
    std::fflush(stdout);
    ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    std::free(buf);
    return 0;
}
