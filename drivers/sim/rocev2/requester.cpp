// RoCEv2 model, requester: builds WRITE packets in PSN order at the DCQCN rate,
// takes cumulative ACKs into completions, goes back N on a NAK or a timeout.
#include "sim/rocev2/rnic.hpp"

#include <algorithm>

#include "sim/wire_size.hpp"

namespace metaroce::sim::rocev2 {

namespace {
// Signed distance a - b in PSN space (wraps at 2^32).
int32_t psn_diff(uint32_t a, uint32_t b) noexcept { return int32_t(a - b); }
} // namespace

void rnic::rewind_cursor(qp& q)
{
    q.cursor = 0;
    while (q.cursor < q.sq.size()) {
        const wqe& w = q.sq[q.cursor];
        if (psn_diff(q.snd_nxt, w.first_psn + w.packets) < 0) {
            return;
        }
        ++q.cursor;
    }
}

bool rnic::build_data(qp& q, uint64_t now_ns, tx_frame& f)
{
    if (q.state != conn_state::established || q.snd_nxt == q.psn_end) {
        return false;
    }
    if (double(now_ns) < q.next_tx_ns) {
        // Not due yet (the heap entry was early): put it back at its time.
        schedule_tx(q);
        return false;
    }
    while (q.cursor < q.sq.size() &&
           psn_diff(q.snd_nxt, q.sq[q.cursor].first_psn + q.sq[q.cursor].packets) >= 0) {
        ++q.cursor;
    }
    const wqe& w = q.sq[q.cursor];
    const uint32_t idx = q.snd_nxt - w.first_psn;
    const uint32_t off = idx * p_.mtu;
    const uint32_t payload = std::min<uint32_t>(p_.mtu, w.len - off);
    const bool first = idx == 0;
    const bool last = idx + 1 == w.packets;
    const op o = first && last ? op::write_only
                 : first      ? op::write_first
                 : last       ? op::write_last
                              : op::write_middle;
    q.since_ack_req += payload;
    uint8_t flags = 0;
    if (last || q.since_ack_req >= p_.ack_every_bytes) {
        flags |= k_flag_ack_req;
        q.since_ack_req = 0;
    }
    uint8_t* p = f.buf.data();
    put_bth(p, bth{o, flags, q.peer_qp, q.snd_nxt});
    uint32_t at = k_bth;
    if (has_reth(o)) {
        put64(p + at, w.remote_va);
        put32(p + at + 8, w.rkey);
        put32(p + at + 12, w.len);
        at += k_reth;
    }
    std::memcpy(p + at, w.src + off, payload);
    at += payload;
    put32(p + at, 0); // ICRC
    f.len = at + k_icrc;
    f.dst_addr = q.peer_addr;
    f.plane = q.plane;
    f.udp_sport = q.sport;
    f.ect = true;

    const bool resend = psn_diff(q.snd_nxt, q.snd_max) < 0;
    ++q.snd_nxt;
    if (psn_diff(q.snd_nxt, q.snd_max) > 0) {
        q.snd_max = q.snd_nxt;
    }
    ++stats_.tx_packets;
    stats_.tx_bytes += f.len;
    ++stats_.tx_data_packets;
    stats_.tx_payload_bytes += payload;
    if (resend) {
        ++stats_.retransmits;
    }
    // Pacing: the next packet of this QP leaves one wire time at the current rate later.
    const double wire_ns = double(wire_bytes(uint32_t(f.len))) * 8 / q.cc.rate_gbps();
    q.next_tx_ns = std::max(q.next_tx_ns, double(now_ns)) + wire_ns;
    q.cc.on_sent(uint32_t(f.len));
    rearm(q);
    return true;
}

void rnic::complete_upto(qp& q, uint32_t una)
{
    if (psn_diff(una, q.snd_una) <= 0) {
        return;
    }
    q.snd_una = una;
    q.retries = 0;
    while (!q.sq.empty()) {
        const wqe& w = q.sq.front();
        if (psn_diff(una, w.first_psn + w.packets) < 0) {
            break;
        }
        if (w.signaled) {
            cq_.push_back(completion{w.wr_id, q.id, 0, wc_status::success, wc_opcode::write,
                                     false, w.len, 0});
            ++stats_.completions;
        }
        q.sq.pop_front();
        q.cursor = q.cursor > 0 ? q.cursor - 1 : 0;
    }
    if (psn_diff(q.snd_nxt, una) < 0) {
        q.snd_nxt = una;
        rewind_cursor(q);
    }
}

void rnic::go_back(qp& q, uint32_t psn)
{
    q.snd_nxt = psn;
    rewind_cursor(q);
    schedule_tx(q);
}

void rnic::on_ack(qp& q, const bth& h, std::span<const uint8_t> b, uint64_t now_ns)
{
    if (b.size() < k_ack_len) {
        ++stats_.rx_invalid;
        return;
    }
    const auto syn = syndrome(b[k_bth]);
    // An ACK names the last PSN received in order; a NAK the PSN expected next.
    const uint32_t una = syn == syndrome::ack ? h.psn + 1 : h.psn;
    if (psn_diff(una, q.snd_una) < 0 || psn_diff(una, q.snd_max) > 0) {
        ++stats_.rx_stale_ack;
        return;
    }
    if (syn == syndrome::nak_access) {
        ++stats_.rx_naks;
        fail(q, wc_status::rem_access_err);
        return;
    }
    const bool progress = psn_diff(una, q.snd_una) > 0;
    complete_upto(q, una);
    if (syn == syndrome::nak_seq) {
        ++stats_.rx_naks;
        ++extra_.go_back_n;
        go_back(q, una);
    } else {
        ++stats_.rx_acks;
    }
    if (progress || syn == syndrome::nak_seq) {
        q.rto_at = q.snd_una == q.psn_end ? UINT64_MAX : now_ns + p_.rto_ns;
        rearm(q);
    }
}

} // namespace metaroce::sim::rocev2
