#include "sim/workload.hpp"

#include <cstring>

#include "sim/data_pattern.hpp"
#include "sim/topology.hpp"
#include "sim/traffic_pattern.hpp"

namespace metaroce::sim {

namespace {
uint64_t key(uint32_t host, conn_id c) { return (uint64_t(host) << 32) | c; }
uint64_t make_wr_id(uint32_t conn_index, uint64_t msg) { return (uint64_t(conn_index) << 40) | msg; }
uint32_t wr_conn(uint64_t wr_id) { return uint32_t(wr_id >> 40); }
uint64_t wr_msg(uint64_t wr_id) { return wr_id & ((uint64_t(1) << 40) - 1); }
} // namespace

workload::workload(const scenario& s, std::vector<std::unique_ptr<host>>& hosts)
    : s_(s), hosts_(hosts), slots_(s.workload.outstanding + 1), payload_(message_payload(s))
{
    auto plan = plan_connections(s);
    pattern_conns_ = plan.size();
    if (const auto v = victim_pair(s)) {
        plan.push_back(*v);
    }
    const uint64_t bytes = payload_;
    const bool read = s.workload.op == wr_opcode::read;
    const bool ring = s.workload.pattern == pattern_kind::allreduce_ring;
    conns_.resize(plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
        auto& c = conns_[i];
        c.sender = plan[i].first;
        c.receiver = plan[i].second;
        c.messages = messages_per_connection(s);
        c.background = i >= pattern_conns_;
        if (c.background) {
            c.messages = uint64_t(1) << 39; // until the incast is over
        }
        if (ring) {
            // Host i starts step k once its predecessor's step k-1 reached it: the
            // connection (i-1) -> i of the same round-robin slot.
            const size_t n = s.workload.senders;
            const size_t base = i - i % n;
            c.pred = int64_t(base + (i % n + n - 1) % n);
        }
        auto& initiator = hosts_[c.sender]->ep().memory();
        auto& target = hosts_[c.receiver]->ep().memory();
        c.src = region_ring(read ? target : initiator, slots_, bytes);
        if (!is_send()) {
            c.dst = region_ring(read ? initiator : target, slots_, bytes);
        }
        c.post_time.assign(slots_, 0);
        c.slot_busy.assign(slots_, 0);
    }
    if (ring) {
        for (size_t i = 0; i < conns_.size(); ++i) {
            conns_[size_t(conns_[i].pred)].succ = int64_t(i);
        }
    }
    open_conns_ = pattern_conns_;
    stats_.conn_done.assign(pattern_conns_, 0);
    stats_.messages_total = pattern_conns_ * messages_per_connection(s);
}

bool workload::uses_recv() const noexcept
{
    const auto op = s_.workload.op;
    return op == wr_opcode::send || op == wr_opcode::send_imm || op == wr_opcode::write_imm;
}

bool workload::is_send() const noexcept
{
    return s_.workload.op == wr_opcode::send || s_.workload.op == wr_opcode::send_imm;
}

void workload::start(sim_time now)
{
    for (uint32_t i = 0; i < conns_.size(); ++i) {
        auto& c = conns_[i];
        c.conn = hosts_[c.sender]->ep().connect(host_addr(c.receiver), to_ns(now));
        if (c.conn == k_no_conn) {
            ++stats_.connect_failures;
            close_conn(c);
            continue;
        }
        by_initiator_[key(c.sender, c.conn)] = i;
        post_more(i, now);
    }
    for (auto& h : hosts_) {
        h->kick(now);
    }
}

void workload::post_more(uint32_t ci, sim_time now)
{
    auto& c = conns_[ci];
    const auto& w = s_.workload;
    sim_transport& ep = hosts_[c.sender]->ep();
    while (!c.closed && c.next_msg < c.messages && c.inflight < w.outstanding &&
           !c.slot_busy[c.next_msg % slots_]) {
        const uint64_t msg = c.next_msg;
        if (c.pred >= 0 && msg > 0 && conns_[size_t(c.pred)].succeeded < msg) {
            return; // allreduce_ring: the previous step's chunk has not arrived yet
        }
        fill_pattern(c.src.data(msg), payload_, ci, msg);
        send_wr wr;
        wr.wr_id = make_wr_id(ci, msg);
        wr.op = w.op;
        wr.stream = uint16_t(msg % w.streams);
        wr.imm = uint32_t(msg);
        const bool read = w.op == wr_opcode::read;
        const memory_region& local = read ? c.dst.mr(msg) : c.src.mr(msg);
        wr.local = sge{local.va, uint32_t(payload_), local.lkey};
        if (read) {
            wr.remote_va = c.src.mr(msg).va;
            wr.rkey = c.src.mr(msg).rkey;
        } else if (!is_send()) {
            wr.remote_va = c.dst.mr(msg).va;
            wr.rkey = c.dst.mr(msg).rkey;
        }
        const post_result r = ep.post_send(c.conn, wr, to_ns(now));
        if (r == post_result::queue_full) {
            return; // retried on the next completion
        }
        if (r != post_result::ok) {
            ++stats_.post_failures;
            close_conn(c);
            return;
        }
        c.slot_busy[msg % slots_] = 1;
        c.post_time[msg % slots_] = now;
        if (!c.background) {
            stats_.first_post = std::min(stats_.first_post, now);
        }
        ++c.inflight;
        ++c.next_msg;
    }
}

void workload::on_completion(uint32_t host, const completion& c, sim_time now)
{
    if (c.op == wc_opcode::recv || c.op == wc_opcode::recv_rdma_with_imm) {
        on_recv_completion(host, c);
        return;
    }
    on_initiator_completion(c, now);
}

void workload::on_initiator_completion(const completion& wc, sim_time now)
{
    const uint32_t ci = wr_conn(wc.wr_id);
    const uint64_t msg = wr_msg(wc.wr_id);
    if (ci >= conns_.size()) {
        ++stats_.error_completions; // a wr_id we never posted
        return;
    }
    auto& c = conns_[ci];
    const uint64_t bytes = payload_;
    --c.inflight;
    ++c.finished;
    c.slot_busy[msg % slots_] = 0;
    if (c.background) {
        if (wc.status == wc_status::success) {
            ++stats_.victim_completed;
            stats_.victim_payload_bytes += bytes;
            const uint8_t* sink = sink_bytes(c, msg);
            if (sink != nullptr && std::memcmp(sink, c.src.data(msg), bytes) == 0) {
                ++stats_.victim_verified;
            }
            post_more(ci, now);
        }
        return;
    }
    if (wc.status != wc_status::success) {
        ++stats_.error_completions;
        ++stats_.messages_failed;
        close_conn(c);
        finish_conn_if_done(c);
        return;
    }
    ++stats_.messages_completed;
    ++c.succeeded;
    stats_.payload_bytes += bytes;
    stats_.last_completion = std::max(stats_.last_completion, now);
    stats_.fct_us.push_back(to_us(now - c.post_time[msg % slots_]));
    stats_.conn_done[ci] = now;
    const uint8_t* sink = sink_bytes(c, msg);
    if (sink != nullptr && std::memcmp(sink, c.src.data(msg), bytes) == 0) {
        ++stats_.messages_verified;
    } else {
        ++stats_.data_mismatches;
    }
    post_more(ci, now);
    if (c.succ >= 0) {
        post_more(uint32_t(c.succ), now);
    }
    finish_conn_if_done(c);
}

const uint8_t* workload::sink_bytes(conn_state_t& c, uint64_t msg)
{
    if (!is_send()) {
        return c.dst.data(msg);
    }
    if (c.incoming < 0) {
        // Bind to the receiver's side of this connection by the id the peer gave it.
        const auto peer = hosts_[c.sender]->ep().peer_conn(c.conn);
        if (!peer) {
            return nullptr;
        }
        const auto it = by_receiver_.find(key(c.receiver, *peer));
        if (it == by_receiver_.end()) {
            return nullptr;
        }
        c.incoming = it->second;
    }
    return incoming_[size_t(c.incoming)].ring.data(msg);
}

void workload::finish_conn_if_done(conn_state_t& c)
{
    if (c.finished == c.messages) {
        close_conn(c);
    }
}

void workload::close_conn(conn_state_t& c)
{
    if (!c.closed) {
        c.closed = true;
        if (!c.background) {
            --open_conns_;
        }
    }
}

void workload::on_conn_event(uint32_t host, const conn_event& e, sim_time)
{
    switch (e.what) {
    case conn_event::kind::established:
        if (e.incoming) {
            on_incoming(host, e);
        }
        break;
    case conn_event::kind::error: {
        ++stats_.conn_error_events;
        const auto it = by_initiator_.find(key(host, e.conn));
        if (it != by_initiator_.end()) {
            close_conn(conns_[it->second]);
        }
        break;
    }
    case conn_event::kind::closed:
        break;
    }
}

} // namespace metaroce::sim
