// The Verbs objects metaroce hands to applications. Each embeds the public struct the
// application sees (at offset 0, except the context, which sits at the end of a
// verbs_context as rdma-core requires) and the front end's state behind it.
// Everything below the public part is guarded by the owning context's mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <vector>

#include "metaroce/verbs_types.hpp"
#include "verbs/abi.hpp"

namespace metaroce::verbs {

struct vcontext;
struct vsrq;

struct vpd {
    ibv_pd pd{};
    int users = 0; // MRs, QPs, SRQs and AHs on it
};

struct vmr {
    ibv_mr mr{};
    int access = 0;
};

inline vpd& vpd_of(ibv_pd* pd) { return *reinterpret_cast<vpd*>(pd); }

struct vah {
    ibv_ah ah{};
    ibv_ah_attr attr{};
};

struct vchannel {
    ibv_comp_channel ch{};   // ch.fd: read end of a pipe carrying ibv_cq pointers
    int wfd = -1;            // write end, non-blocking
    std::mutex mu;
    std::set<const ibv_cq*> live; // CQs whose events may still be read
};

struct vcq {
    ibv_cq_ex ex{};          // an ibv_cq is its prefix (ibv_cq_ex_to_cq casts)
    vcontext* ctx = nullptr;
    std::deque<ibv_wc> q;
    bool armed = false;
    bool solicited_only = false; // armed for solicited (and error) completions only
    uint32_t events_read = 0;  // events ibv_get_cq_event returned (acks must match)
    int users = 0;             // QPs and SRQs naming it
    uint64_t wc_flags = 0;     // CQ_EX: which fields ibv_wc_read_* may read
    ibv_wc cur{};              // CQ_EX: the entry start_poll/next_poll made current
    bool in_poll = false;
};

// One send work request as the front end keeps it until it completes.
struct send_rec {
    uint64_t wr_id = 0;
    ibv_wr_opcode op = IBV_WR_SEND;
    unsigned flags = 0;        // ibv_send_flags
    uint32_t num_sge = 0;      // pieces in the QP's sge array at index*max_send_sge
    uint32_t length = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;
    bool inlined = false;      // data copied into the QP's inline area
};

struct recv_rec {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
};

// A ring indexed by a 64-bit sequence: [head, sub) is with the core, [sub, tail) waits.
struct seq_ring {
    uint32_t depth = 0;
    uint64_t head = 0;
    uint64_t sub = 0;
    uint64_t tail = 0;
    bool full() const noexcept { return tail - head >= depth; }
    uint32_t slot(uint64_t s) const noexcept { return uint32_t(s % depth); }
};

struct vqp {
    ibv_qp_ex ex{};            // ibv_qp at offset 0
    vcontext* ctx = nullptr;
    ibv_qp_type type = IBV_QPT_RC;
    bool sig_all = false;
    bool has_ex = false;       // created with send_ops_flags: ibv_qp_to_qp_ex works
    ibv_qp_cap cap{};
    vsrq* srq = nullptr;
    ibv_qp_attr attr{};        // as last set, for ibv_query_qp

    // Binding (doc/spec.md section 12).
    uint32_t peer = 0;         // peer node address
    uint32_t dest_qpn = 0;
    conn_id conn = k_no_conn;  // shared connection to the peer, once attached
    uint16_t rx_stream = 0;    // where the peer's traffic for us arrives (we chose it)
    uint16_t tx_stream = 0;    // where we send (the peer chose it); 0: not yet bound
    bool waiting = false;      // in RTR/RTS, not attached to a connection yet
    uint64_t wait_since_ns = 0;  // the unbound wait's start (its first period ends a period later)
    uint64_t wait_next_ns = 0;   // end of the current wait period (0: from wait_since_ns)
    uint8_t wait_periods = 0;    // periods of the wait ended so far (check_waiting)
    bool clean_stream = true;  // no receives left with the core on rx_stream

    seq_ring sq;
    std::vector<send_rec> sends;
    std::vector<sge> send_sges;     // depth * max_send_sge
    std::vector<uint8_t> inline_area; // depth * max_inline_data, registered
    uint32_t inline_lkey = 0;
    uint32_t reads_inflight = 0;    // READs with the core (IBV_SEND_FENCE waits)

    seq_ring rq;
    std::vector<recv_rec> recvs;
    std::vector<sge> recv_sges;     // depth * max_recv_sge

    // ibv_wr_* batch: records [sq.tail, build) not yet visible.
    uint64_t build = 0;
    int build_err = 0;
};

// The unbound wait starts again at `now` (RTR, or a send posted to an idle unbound QP):
// check_waiting gives it the QP's whole budget from there.
inline void restart_wait(vqp& q, uint64_t now) noexcept
{
    q.wait_since_ns = std::max(q.wait_since_ns, now);
    q.wait_next_ns = 0;
    q.wait_periods = 0;
}

struct vsrq {
    ibv_srq srq{};
    vcontext* ctx = nullptr;
    uint32_t max_wr = 0;
    uint32_t max_sge = 0;
    uint32_t limit = 0;
    std::deque<std::pair<recv_rec, std::vector<sge>>> pool; // not yet handed to a QP
    int users = 0;
};

} // namespace metaroce::verbs
