// The traffic of a run: which hosts talk, the regions they use, posting messages as
// the window allows, checking every delivered byte and timing every message.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/host.hpp"
#include "sim/region_ring.hpp"
#include "sim/scenario.hpp"

namespace metaroce::sim {

struct workload_stats {
    uint64_t messages_total = 0;
    uint64_t messages_completed = 0;   // successful completions at the initiator
    uint64_t messages_failed = 0;      // error completions at the initiator
    uint64_t messages_verified = 0;
    uint64_t data_mismatches = 0;      // completed but the bytes differ
    uint64_t recv_mismatches = 0;      // receive completion with wrong length or imm
    uint64_t recv_completions = 0;
    uint64_t recv_post_failures = 0;
    uint64_t post_failures = 0;        // post_send refused with an error (not queue_full)
    uint64_t conn_error_events = 0;
    uint64_t error_completions = 0;
    uint64_t payload_bytes = 0;        // of completed messages
    uint64_t connect_failures = 0;
    // The incast victim, kept out of every figure above.
    uint64_t victim_completed = 0;
    uint64_t victim_verified = 0;
    uint64_t victim_payload_bytes = 0;
    sim_time first_post = k_never;
    sim_time last_completion = 0;
    std::vector<double> fct_us;        // one sample per completed message
    std::vector<sim_time> conn_done;   // per pattern connection: its last completion
};

class workload : public host_listener {
public:
    workload(const scenario& s, std::vector<std::unique_ptr<host>>& hosts);

    // Connects every connection and posts the first messages at time `now`.
    void start(sim_time now);
    bool done() const noexcept { return open_conns_ == 0; }
    // Initiator side of connection i (host, id): for per-connection state snapshots.
    std::pair<uint32_t, conn_id> initiator(size_t i) const noexcept
    {
        return {conns_[i].sender, conns_[i].conn};
    }
    // Connections of the pattern, without the victim.
    size_t pattern_connections() const noexcept { return pattern_conns_; }
    const workload_stats& stats() const noexcept { return stats_; }
    size_t connections() const noexcept { return conns_.size(); }

    void on_completion(uint32_t host, const completion& c, sim_time now) override;
    void on_conn_event(uint32_t host, const conn_event& e, sim_time now) override;

private:
    // One connection of the workload, seen from its initiator.
    struct conn_state_t {
        uint32_t sender = 0;
        uint32_t receiver = 0;
        conn_id conn = k_no_conn;
        region_ring src;   // data source (on the responder for READ)
        region_ring dst;   // data sink (on the initiator for READ); unused for SEND
        uint64_t messages = 0;    // to send on this connection
        uint64_t next_msg = 0;
        uint64_t finished = 0; // completed or failed messages
        uint64_t succeeded = 0;
        int64_t pred = -1;     // allreduce_ring: message i waits for message i-1 of pred
        int64_t succ = -1;     // the connection waiting on this one
        bool background = false; // the victim: not counted, does not keep the run going
        uint32_t inflight = 0;
        std::vector<sim_time> post_time;  // per slot
        std::vector<uint8_t> slot_busy;
        int64_t incoming = -1;            // receiver record for SEND*, once bound
        bool closed = false;     // no more posting: finished or failed
    };
    // A connection as its receiver sees it (SEND* and WRITE_IMM only).
    struct incoming_t {
        uint32_t host = 0;
        uint32_t peer = 0;
        conn_id conn = k_no_conn;
        region_ring ring;      // receive buffers (SEND*) or one scratch slot
        uint64_t next_post = 0;
    };

    bool uses_recv() const noexcept;
    bool is_send() const noexcept;
    void post_more(uint32_t ci, sim_time now);
    void on_initiator_completion(const completion& c, sim_time now);
    void on_recv_completion(uint32_t host, const completion& c);
    void on_incoming(uint32_t host, const conn_event& e);
    void post_recv(incoming_t& in, uint64_t msg);
    const uint8_t* sink_bytes(conn_state_t& c, uint64_t msg);
    void finish_conn_if_done(conn_state_t& c);
    void close_conn(conn_state_t& c);

    const scenario& s_;
    std::vector<std::unique_ptr<host>>& hosts_;
    uint32_t slots_;
    uint64_t payload_;          // bytes per message
    size_t pattern_conns_ = 0;
    std::vector<conn_state_t> conns_;
    std::vector<incoming_t> incoming_;
    // (host << 32 | conn id) -> index into conns_ or incoming_
    std::unordered_map<uint64_t, uint32_t> by_initiator_;
    std::unordered_map<uint64_t, uint32_t> by_receiver_;
    size_t open_conns_ = 0;
    workload_stats stats_;
};

} // namespace metaroce::sim
