// RoCEv2 model, responder: in-order placement only, one NAK per gap, coalesced
// ACKs, and the DCQCN notification point (one CNP per QP per 50 us of CE marks).
#include "sim/rocev2/rnic.hpp"

namespace metaroce::sim::rocev2 {

void rnic::on_data(qp& q, const bth& h, const rx_meta& m, std::span<const uint8_t> b,
                       uint64_t now_ns)
{
    if (m.ce && (!q.cnp_ever || now_ns - q.last_cnp_ns >= p_.cnp_interval_ns)) {
        q.cnp_ever = true;
        q.last_cnp_ns = now_ns;
        queue_ctrl(q, op::cnp, 0, nullptr, k_cnp_body);
        ++extra_.cnp_sent;
    }
    if (m.ce) {
        ++stats_.rx_ce;
    }
    uint8_t aeth[k_aeth] = {};
    const auto diff = int32_t(h.psn - q.epsn);
    if (diff < 0) {
        // Duplicate: re-ACK what we have so a requester that timed out moves on.
        ++stats_.rx_duplicates;
        aeth[0] = uint8_t(syndrome::ack);
        queue_ctrl(q, op::ack, q.epsn - 1, aeth, k_aeth);
        ++stats_.tx_acks;
        return;
    }
    if (diff > 0) {
        ++extra_.out_of_order_drops;
        if (!q.nak_sent) {
            q.nak_sent = true;
            aeth[0] = uint8_t(syndrome::nak_seq);
            queue_ctrl(q, op::ack, q.epsn, aeth, k_aeth);
            ++stats_.tx_naks;
        }
        return;
    }
    uint32_t at = k_bth;
    if (has_reth(h.opcode)) {
        const uint64_t va = get64(b.data() + at);
        const uint32_t rkey = get32(b.data() + at + 8);
        const uint32_t len = get32(b.data() + at + 12);
        at += k_reth;
        uint8_t* dst = nullptr;
        if (mrs_.check_remote(rkey, va, len, access::remote_write, &dst) != mr_check::ok) {
            ++stats_.rx_access_errors;
            aeth[0] = uint8_t(syndrome::nak_access);
            queue_ctrl(q, op::ack, q.epsn, aeth, k_aeth);
            return;
        }
        q.cur_dst = dst;
        q.cur_left = len;
    }
    const size_t payload = b.size() - at - k_icrc;
    if (q.cur_dst == nullptr || payload > q.cur_left) {
        ++stats_.rx_invalid;
        return;
    }
    std::memcpy(q.cur_dst, b.data() + at, payload);
    q.cur_dst += payload;
    q.cur_left -= payload;
    stats_.rx_payload_bytes += payload;
    if (ends_message(h.opcode)) {
        q.cur_dst = nullptr;
    }
    ++q.epsn;
    q.nak_sent = false;
    if ((h.flags & k_flag_ack_req) != 0) {
        aeth[0] = uint8_t(syndrome::ack);
        queue_ctrl(q, op::ack, h.psn, aeth, k_aeth);
        ++stats_.tx_acks;
    }
}

} // namespace metaroce::sim::rocev2
