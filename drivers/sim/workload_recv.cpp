// The receiving side of SEND, SEND_IMM and WRITE_IMM: receives are posted as the
// connection appears and reposted as they complete, one per message, in order.
#include "sim/workload.hpp"

#include "sim/traffic_pattern.hpp"

namespace metaroce::sim {

namespace {
uint64_t key(uint32_t host, conn_id c) { return (uint64_t(host) << 32) | c; }
} // namespace

void workload::on_incoming(uint32_t host, const conn_event& e)
{
    if (!uses_recv()) {
        return;
    }
    incoming_t in;
    in.host = host;
    in.peer = e.peer;
    in.conn = e.conn;
    // WRITE_IMM data lands at the rkey address; its receive only needs a buffer.
    const uint64_t slot = is_send() ? payload_ : 64;
    in.ring = region_ring(hosts_[host]->ep().memory(), is_send() ? slots_ : 1, slot);
    by_receiver_[key(host, e.conn)] = uint32_t(incoming_.size());
    incoming_.push_back(std::move(in));
    auto& rec = incoming_.back();
    const uint64_t first = std::min<uint64_t>(slots_, messages_per_connection(s_));
    for (uint64_t m = 0; m < first; ++m) {
        post_recv(rec, m);
    }
}

void workload::post_recv(incoming_t& in, uint64_t msg)
{
    recv_wr wr;
    wr.wr_id = msg;
    const memory_region& mr = in.ring.mr(msg);
    // A WRITE_IMM receive takes no bytes: an empty buffer, as verbs apps post.
    wr.local = sge{mr.va, is_send() ? uint32_t(in.ring.slot_bytes()) : 0, mr.lkey};
    const auto stream = uint16_t(msg % s_.workload.streams);
    if (hosts_[in.host]->ep().post_recv(in.conn, stream, wr) != post_result::ok) {
        ++stats_.recv_post_failures;
        return;
    }
    in.next_post = msg + 1;
}

void workload::on_recv_completion(uint32_t host, const completion& c)
{
    const auto it = by_receiver_.find(key(host, c.conn));
    if (it == by_receiver_.end()) {
        ++stats_.recv_mismatches; // a receive we never posted
        return;
    }
    auto& in = incoming_[it->second];
    if (c.status != wc_status::success) {
        ++stats_.error_completions;
        return;
    }
    ++stats_.recv_completions;
    const auto op = s_.workload.op;
    const bool want_imm = op == wr_opcode::send_imm || op == wr_opcode::write_imm;
    const bool len_ok = op == wr_opcode::write_imm || c.byte_len == payload_;
    const bool imm_ok = !want_imm || (c.has_imm && c.imm == uint32_t(c.wr_id));
    if (!len_ok || !imm_ok) {
        ++stats_.recv_mismatches;
    }
    const uint64_t next = c.wr_id + slots_;
    if (next < messages_per_connection(s_)) {
        post_recv(in, next);
    }
}

} // namespace metaroce::sim
