// One opened metaroce0: a metaroce node (the core endpoint on a backend), the
// progress thread that drives it, the connections shared by the QPs and the binding
// of QPs to (connection, stream) pairs (doc/spec.md section 12).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "verbs/backend.hpp"
#include "verbs/objects.hpp"
#include "verbs/settings.hpp"

namespace metaroce::verbs {

// A BIND control message (spec 12.3): `src_qpn` of the sender asks to be joined to
// `dst_qpn` of the receiver and receives that QP's traffic on `stream`.
struct bind_msg {
    conn_id conn = k_no_conn;
    uint32_t src_qpn = 0;
    uint32_t dst_qpn = 0;
    uint16_t stream = 0;
    uint64_t at_ns = 0;
};

struct conn_rec {
    uint32_t peer = 0;
    bool incoming = false;
    bool established = false;
    std::vector<uint8_t> rx_used;  // streams we assigned to our QPs (0: control)
    std::vector<uint32_t> ctl_slots; // control receive slots posted on stream 0
};

struct vcontext;

// What an application's ibv_context sits in. Opening metaroce0 again in a process with
// the same settings (address, port, backend) gives another handle on the same node, as
// a second context on one HCA: the same GID, QPs of both can be connected to each
// other. Each handle has its own async event queue; the node closes with its last one.
struct vhandle {
    verbs_context vctx{};            // first: ctx_of finds the handle from the context
    vcontext* owner = nullptr;
    int async_w = -1;                // write end of this handle's async_fd
};

struct vcontext : vhandle {          // the handle opened first, and the device state
    std::mutex mu;
    std::vector<vhandle*> handles;   // every open handle, this one first
    bool parked = false;             // no handles, kept for the next open (remakeable())
    settings st;
    std::unique_ptr<backend> node;   // UDP sockets or DPDK ports (backend.hpp)
    std::vector<uint32_t> planes;    // plane addresses; [0] is the node address
    uint32_t addr = 0;

    uint32_t next_qpn = 0x100;
    std::unordered_map<uint32_t, vqp*> qps;
    std::unordered_map<conn_id, conn_rec> conns;
    std::map<uint32_t, conn_id> out_conn;  // peer -> connection we initiated
    std::map<uint32_t, conn_id> in_conn;   // peer -> connection the peer initiated
    std::vector<bind_msg> early_binds;     // BINDs for QPs not attached yet
    std::vector<bind_msg> ctl_backlog;     // BINDs waiting for a control send slot
    std::vector<vqp*> dirty;               // QPs with work waiting for the core
    // QPs the core refused for a full message window (shared by every QP of the
    // connection): any completion may make room for them.
    std::vector<vqp*> blocked;

    std::vector<uint8_t> ctl_mem;          // control slots, registered with the core
    uint32_t ctl_lkey = 0;
    std::vector<uint32_t> ctl_free_tx;     // free control send slots

    std::thread progress;
    std::atomic<bool> stop{false};
    std::atomic<bool> sleeping{false};
    std::atomic<uint64_t> kicks{0};        // wake() calls: one since the last drive forbids a nap
    std::atomic<uint64_t> app_poll_ns{0};
    int epfd = -1;
    int wakefd = -1;
    uint64_t async_events = 0;
};

vcontext* ctx_of(ibv_context* c) noexcept;
bool is_ours(const ibv_context* c) noexcept;
ibv_device* our_device() noexcept;

// ibv_open_device / ibv_close_device: a handle on this process's node for the same
// settings, or a new node. nullptr and a message in `err` on failure.
ibv_context* open_device(std::string& err);
int close_device(ibv_context* ctx);
// A descriptor that is (a dup of) one of our contexts' cmd_fd.
bool is_our_cmd_fd(int fd);
// A new node and its progress thread; the last handle's close stops and frees it.
vcontext* open_context(settings st, std::string& err);
void close_context(vcontext* c);
// Stops the progress thread after the last ACKs left, and logs the close summary.
void quiesce(vcontext* c);
void install_context_ops(verbs_context& v);

// All below: called with c.mu held.
bool drive(vcontext& c, uint64_t now_ns);          // one progress pass; true if busy
void wake(vcontext& c) noexcept;                   // let the progress thread re-plan
void mark_dirty(vcontext& c, vqp& q);
void qp_connect(vcontext& c, vqp& q, uint64_t now_ns);  // at RTR (spec 12.2)
void qp_detach(vcontext& c, vqp& q);               // at RESET or destroy
void qp_error(vcontext& c, vqp& q, ibv_wc_status first, bool async_fatal);
void submit(vcontext& c, vqp& q, uint64_t now_ns);
// Queues a completion; an armed CQ notifies its channel (solicited_only: only for a
// solicited receive or an error).
void emit(vcq& cq, const ibv_wc& wc, bool solicited = false);
void post_async(vcontext& c, ibv_event_type type, void* obj) noexcept;
void srq_refill(vcontext& c, vqp& q);
// Receives q took from its SRQ that the core does not hold go back to the pool's front.
void srq_give_back(vqp& q);
// A SEND found q's stream without a receive (the core's RNR notice): a QP on an SRQ gets
// one from the pool, or from a sibling's unclaimed receives.
void on_recv_wanted(vcontext& c, const recv_wanted& w);
// What the core holds for a QP leaving its streams (ERR, RESET, destroy): unclaimed
// receives come back (an SRQ's to its pool), unfinished sends stop needing our memory.
void release_core_work(vcontext& c, vqp& q);
uint64_t now_ns() noexcept;
// metaroce_set_paths (verbs_ext.h): paths for contexts opened from now on; 0: settings.
extern std::atomic<uint16_t> g_paths_override;

// Binding internals (binding.cpp), called by drive().
void on_conn_event(vcontext& c, const conn_event& e, uint64_t now_ns);
void on_ctl_completion(vcontext& c, const completion& wc, uint64_t now_ns);
void flush_ctl_backlog(vcontext& c, uint64_t now_ns);
void check_waiting(vcontext& c, uint64_t now_ns);
// QP completion handling (qp_flow.cpp).
void on_qp_completion(vcontext& c, const completion& wc);

// Core wr_id layout: QP number above, 40-bit sequence below; QP 0 is the control QP.
inline uint64_t make_wr_id(uint32_t qpn, uint64_t seq) noexcept
{
    return (uint64_t(qpn) << 40) | (seq & ((1ull << 40) - 1));
}

void logf(const vcontext& c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace metaroce::verbs
