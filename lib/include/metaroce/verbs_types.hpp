// Verbs-shaped work requests and completions. Names and statuses follow
// libibverbs so the Verbs front end maps them one to one.
#pragma once

#include <cstdint>
#include <string_view>

namespace metaroce {

using conn_id = uint32_t;
inline constexpr conn_id k_no_conn = 0;

namespace access {
inline constexpr uint32_t local_write = 1u << 0;
inline constexpr uint32_t remote_write = 1u << 1;
inline constexpr uint32_t remote_read = 1u << 2;
} // namespace access

struct sge {
    uint64_t addr = 0;   // local virtual address inside the region of lkey
    uint32_t length = 0;
    uint32_t lkey = 0;
};

// Most pieces one work request may gather from or scatter to.
inline constexpr uint32_t k_max_sge = 16;

enum class wr_opcode : uint8_t { write, write_imm, send, send_imm, read };

struct send_wr {
    uint64_t wr_id = 0;
    wr_opcode op = wr_opcode::write;
    uint16_t stream = 0;
    sge local;               // the message's memory when num_sge is 0
    // A gather list (a scatter list for READ) of num_sge pieces, used instead of
    // `local` when num_sge > 0. The core copies it while posting.
    const sge* sg_list = nullptr;
    uint32_t num_sge = 0;
    uint64_t remote_va = 0;  // WRITE*/READ
    uint32_t rkey = 0;       // WRITE*/READ
    uint32_t imm = 0;        // *_IMM
    bool signaled = true;
    bool solicited = false;  // SEND*, WRITE_IMM: the receive's completion is solicited
};

struct recv_wr {
    uint64_t wr_id = 0;
    sge local;               // as in send_wr: used when num_sge is 0
    const sge* sg_list = nullptr;
    uint32_t num_sge = 0;
    // The keys and bounds are checked only when a message lands (its receive completes
    // with loc_prot_err and the sender's request with a NAK, spec 8.2), not at the post:
    // Verbs semantics, where a region may be reregistered or deregistered between the
    // two. Off: post_recv refuses a bad key or range at once.
    bool check_at_use = false;
};

enum class wc_status : uint8_t {
    success,
    loc_len_err,
    loc_prot_err,
    wr_flush_err,
    rem_access_err,
    rem_inv_req_err,
    rnr_retry_exc_err,
    retry_exc_err,
    rem_op_err,
};
std::string_view to_string(wc_status s) noexcept;

enum class wc_opcode : uint8_t { write, send, read, recv, recv_rdma_with_imm };

struct completion {
    uint64_t wr_id = 0;
    conn_id conn = k_no_conn;
    uint16_t stream = 0;
    wc_status status = wc_status::success;
    wc_opcode op = wc_opcode::write;
    bool has_imm = false;
    uint32_t byte_len = 0;
    uint32_t imm = 0;
    bool solicited = false;  // receives: the sender asked for a solicited event
};

// Why post_send/post_recv refused a request; nothing was queued when not ok.
enum class post_result : uint8_t {
    ok,
    no_such_conn,
    conn_not_usable,   // closing, closed or in error
    queue_full,        // max_msgs (or rq_depth) outstanding, or the list pool is spent
    bad_stream,
    bad_lkey,
    bad_access,        // region lacks local_write for a READ or a receive
    out_of_bounds,
    too_long,          // longer than 2^31 bytes
    too_many_sge,      // more than k_max_sge pieces
};
std::string_view to_string(post_result r) noexcept;

enum class conn_state : uint8_t { connecting, established, closing, closed, error };
std::string_view to_string(conn_state s) noexcept;

// Connection lifecycle events, polled like completions.
struct conn_event {
    enum class kind : uint8_t { established, closed, error } what = kind::established;
    conn_id conn = k_no_conn;
    uint32_t peer = 0;
    bool incoming = false;   // the peer initiated it
};

// A stream that a SEND found with no receive posted for it (answered RNR, spec 8.2),
// polled like events: a front end that hands receives out from a pool several streams
// share (a Verbs SRQ) gives that stream one, or the SEND would wait for ever.
struct recv_wanted {
    conn_id conn = k_no_conn;
    uint16_t stream = 0;
};

} // namespace metaroce
