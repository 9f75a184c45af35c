// Internal state of one connection: paths (send and receive halves), outbound
// message slots, inbound message slots, streams and READ responder jobs.
// Everything is sized at connection set-up; the datapath never allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "fixed_ring.hpp"
#include "metaroce/congestion.hpp"
#include "metaroce/endpoint.hpp"
#include "metaroce/sack_window.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::detail {

inline constexpr uint32_t k_path_window = wire::k_sack_bits;
inline constexpr int32_t k_nil = -1;

enum class rec_kind : uint8_t { request, read_resp };
enum class rec_state : uint8_t { free, in_flight, sacked, lost, rnr_hold };

// Sender: one PSN on a path, enough to rebuild the packet from the message.
struct pkt_record {
    uint32_t msn = 0;
    uint32_t offset = 0;
    uint32_t sent_ts = 0;
    uint32_t xmit_no = 0;   // path transmit counter at the last (re)transmission
    uint16_t len = 0;
    uint16_t slot = 0;      // send slot or read job index
    rec_kind kind = rec_kind::request;
    rec_state state = rec_state::free;
    uint8_t retx = 0;
};

struct path_tx {
    uint32_t next_psn = 0;
    uint32_t una = 0;
    uint32_t inflight = 0;            // records in_flight, lost or rnr_hold
    uint32_t xmit_counter = 0;
    uint32_t highest_sacked_xmit = 0;
    uint64_t srtt_ns = 0;
    uint64_t min_rtt_ns = 0;
    uint64_t rttvar_ns = 0;
    uint64_t rto_ns = 0;
    uint64_t rto_deadline = k_no_deadline;
    uint64_t tlp_deadline = k_no_deadline; // tail-loss probe, once per quiet spell
    uint32_t timeouts = 0;            // consecutive, reset by progress
    uint64_t silent_since = 0;        // time of the first timeout of the current streak
    uint32_t epoch = 0;               // bumps on every reroute
    uint16_t udp_sport = 0;
    uint8_t plane = 0;
    uint8_t home_plane = 0;           // where the path lives while that plane is usable
    path_state state = path_state::good;
    uint64_t congested_until = 0;
    bool probe_pending = false;       // a PROBE for this path is waiting to go out
    bool in_retx_list = false;
    path_cc_state cc;
    fixed_ring<uint32_t> retx;        // PSNs to resend
    std::vector<pkt_record> rec;      // indexed by psn % k_path_window
    uint64_t tx_packets = 0;
    uint64_t retransmits = 0;
    uint64_t acked_ce = 0;
    uint64_t acked_rx = 0;

    pkt_record& at(uint32_t psn) noexcept { return rec[psn % k_path_window]; }
};

// Tail-loss probe timeout: two smoothed RTTs plus the receiver's delayed-ACK allowance,
// never later than the RTO itself.
inline uint64_t probe_timeout(const path_tx& p, uint64_t initial_rtt_ns, uint64_t ack_delay_ns) noexcept
{
    const uint64_t rtt = p.srtt_ns != 0 ? p.srtt_ns : initial_rtt_ns;
    const uint64_t pto = 2 * rtt + ack_delay_ns;
    return pto < p.rto_ns ? pto : p.rto_ns;
}

struct path_rx {
    sack_window win;
    uint32_t bytes_since_ack = 0;
    uint16_t rx_pkts = 0;
    uint16_t ce_pkts = 0;
    uint32_t last_ts = 0;
    uint16_t reply_sport = 0;         // ACKs go back the way data came
    uint8_t reply_plane = 0;
    bool ack_queued = false;
    bool ack_delayed = false;
};

// Requester: one posted send work request, keyed by msn % max_msgs.
struct send_slot {
    bool in_use = false;
    bool done = false;
    bool resp_complete = false;       // READ: every response byte has landed
    wc_status status = wc_status::success;
    wire::opcode op{};
    uint32_t msn = 0;
    uint32_t ssn = 0;
    uint32_t recv_seq = 0;
    send_wr wr;
    uint8_t* local = nullptr;
    uint32_t next_offset = 0;
    bool fully_sent = false;
    uint32_t pkts_total = 0;
    uint32_t pkts_acked = 0;
    uint32_t resp_bytes = 0;
    uint32_t rnr_count = 0;
    int32_t next_in_stream = k_nil;
};

// Responder: one inbound message, keyed by the peer's msn % max_msgs.
struct recv_slot {
    bool in_use = false;
    wire::opcode op{};
    uint16_t stream = 0;
    uint8_t tail_len = 0;
    uint32_t msn = 0;
    uint32_t ssn = 0;
    uint32_t recv_seq = 0;
    uint32_t msg_len = 0;
    uint32_t received = 0;
    uint32_t imm = 0;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint8_t* dst = nullptr;           // message start in memory (READ_REQ: source)
    uint8_t tail[8] = {};             // last bytes of a WRITE, placed at commit
    int32_t next_pending = k_nil;
};

struct posted_recv {
    uint64_t wr_id = 0;
    uint8_t* host = nullptr;
    uint32_t length = 0;
};

struct stream_state {
    // requester side
    uint32_t next_ssn = 0;
    uint32_t next_recv_seq = 0;
    int32_t head = k_nil;             // oldest uncompleted send slot
    int32_t tail = k_nil;
    // responder side
    uint32_t commit_ssn = 0;
    int32_t pending = k_nil;          // complete, not yet committed inbound slots
    std::vector<posted_recv> rq;
    uint32_t rq_posted = 0;
    uint32_t rq_consumed = 0;
};

// Responder: a READ being answered from local memory.
struct read_job {
    bool in_use = false;
    bool done = false;
    uint16_t stream = 0;
    uint32_t msn = 0;                 // requester's msn
    uint8_t* src = nullptr;
    uint32_t len = 0;
    uint32_t next_offset = 0;
    bool fully_sent = false;
    uint32_t pkts_total = 0;
    uint32_t pkts_acked = 0;
};

struct nak_entry {
    uint8_t path = 0;
    uint32_t psn = 0;
    wire::nak_header hdr{};
};

// Connection ids carry their table slot + 1 in the low 16 bits (a generation above).
inline uint32_t slot_of(conn_id id) noexcept { return (id & 0xffffu) - 1; }

// What a failed local memory check means to post_send/post_recv.
inline post_result to_post_result(mr_check c) noexcept
{
    switch (c) {
    case mr_check::ok: return post_result::ok;
    case mr_check::bad_key: return post_result::bad_lkey;
    case mr_check::access_denied: return post_result::bad_access;
    case mr_check::out_of_bounds: return post_result::out_of_bounds;
    }
    return post_result::bad_lkey;
}

struct connection;
void queue_retx(connection& c, uint32_t path, uint32_t psn) noexcept;
// Marks every packet of a path that is on the wire as lost and queues it for resending.
void requeue_in_flight(connection& c, uint32_t path) noexcept;

struct connection {
    conn_id id = k_no_conn;
    conn_id peer_conn = k_no_conn;
    uint32_t peer_addr = 0;
    conn_state state = conn_state::connecting;
    bool incoming = false;
    uint64_t nonce = 0;
    uint32_t isn = 0;

    // Negotiated (own config until ACCEPT for an initiator).
    uint16_t paths = 0;
    uint16_t mtu = 0;
    uint16_t streams_n = 0;
    uint16_t max_msgs = 0;            // peer-agreed window of outstanding messages
    uint8_t planes = 1;

    std::vector<path_tx> ptx;
    std::vector<path_rx> prx;
    conn_cc_state cc;
    uint64_t min_rtt_ns = 0;          // smallest RTT sample of any path
    uint64_t srtt_ns = 0;             // smoothed over every path's samples
    uint32_t inflight = 0;
    uint32_t rr_path = 0;

    std::vector<send_slot> sq;        // size = own max_msgs
    uint32_t next_msn = 0;            // next msn to assign
    uint32_t tx_msn = 0;              // next msn to packetize
    uint32_t outstanding = 0;
    uint32_t reads_outstanding = 0;

    std::vector<recv_slot> rslots;    // size = negotiated max_msgs
    std::vector<stream_state> streams;

    std::vector<read_job> jobs;
    uint32_t job_head = 0;            // ring of jobs in arrival order
    uint32_t job_count = 0;
    uint32_t job_tx = 0;              // offset from job_head of the job being sent

    fixed_ring<uint16_t> ack_queue;
    fixed_ring<uint16_t> retx_paths;
    fixed_ring<nak_entry> naks;
    wire::nak_reason fatal_reason = wire::nak_reason::invalid_request;
    uint32_t fatal_msn = 0;
    bool has_fatal = false;

    uint32_t probes_pending = 0;      // paths with probe_pending set
    uint32_t plane_probes = 0;        // bit per plane: a plane probe to send
    bool hello_pending = false;
    bool close_pending = false;
    uint64_t ctrl_deadline = k_no_deadline;
    uint32_t ctrl_retries = 0;
    uint64_t ack_deadline = k_no_deadline;
    uint64_t rnr_deadline = k_no_deadline;
    uint64_t pace_next = 0;           // earliest time for the next new packet under a hint
    bool pace_wait = false;           // new data is waiting for pace_next

    bool in_ready = false;
    bool cq_blocked = false;
    uint64_t timer_deadline = k_no_deadline;

    uint64_t tx_msgs_completed = 0;
    uint64_t rx_msgs_committed = 0;
};

inline void queue_retx(connection& c, uint32_t path, uint32_t psn) noexcept
{
    path_tx& p = c.ptx[path];
    p.at(psn).state = rec_state::lost;
    p.retx.push(psn);
    if (!p.in_retx_list) {
        p.in_retx_list = c.retx_paths.push(uint16_t(path));
    }
}

inline void requeue_in_flight(connection& c, uint32_t path) noexcept
{
    path_tx& p = c.ptx[path];
    for (uint32_t psn = p.una; psn != p.next_psn; ++psn) {
        if (p.at(psn).state == rec_state::in_flight) {
            queue_retx(c, path, psn);
        }
    }
}

} // namespace metaroce::detail
