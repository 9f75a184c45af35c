// A model of RoCEv2 RC as deployed on a lossy fabric without PFC; it is a model of
// RoCEv2 for side-by-side runs, not RoCEv2. One QP per connection, one path: a
// fixed UDP source port (one ECMP route) on one plane (plane 0, or QP k on plane
// k % planes with `spread_planes`, as multi-rail hosts bind QPs to ports).
//  - Requester (rocev2/requester.cpp): WRITEs split into FIRST/MIDDLE/LAST/ONLY
//    packets with in-order PSNs, paced at the DCQCN rate; a NAK (sequence error)
//    makes it go back N to the NAKed PSN; a retransmission timer (fixed, no backoff,
//    `retry_cnt` consecutive expiries fail the QP) covers tail loss.
//  - Responder (rocev2/responder.cpp): accepts only the expected PSN and places its
//    bytes, drops anything out of order and NAKs once per gap, re-ACKs duplicates,
//    ACKs coalesced (on every packet with ack_req: the last of a message and every
//    ack_every_bytes), and sends a CNP for a CE-marked packet at most once per 50 us.
// Only WRITE is modelled; the scenario refuses other ops with this protocol.
#pragma once

#include <cstdint>
#include <deque>
#include <queue>
#include <unordered_map>
#include <vector>

#include "sim/rocev2/dcqcn.hpp"
#include "sim/rocev2/wire.hpp"
#include "sim/transport.hpp"

namespace metaroce::sim::rocev2 {

struct params {
    uint32_t local_addr = 0;
    uint8_t planes = 1;
    bool spread_planes = false;
    uint16_t mtu = 4096;
    uint32_t max_qps = 1024;
    uint32_t max_mrs = 4096;
    uint16_t max_wqes = 256;            // send queue depth per QP
    uint32_t ack_every_bytes = 16384;   // ack_req on every this many bytes
    uint64_t rto_ns = 100'000;          // local ACK timeout
    uint32_t retry_cnt = 7;
    uint64_t cm_retry_ns = 200'000;
    uint64_t cnp_interval_ns = 50'000;  // notification point: one CNP per QP per interval
    uint64_t seed = 1;
    dcqcn_params cc;
};

struct extra_stats {
    uint64_t cnp_sent = 0;
    uint64_t cnp_received = 0;
    uint64_t rate_cuts = 0;
    uint64_t go_back_n = 0;           // NAKs acted on
    uint64_t out_of_order_drops = 0;  // data dropped by the responder for a PSN gap
};

class rnic final : public sim_transport {
public:
    explicit rnic(const params& p);

    mr_table& memory() noexcept override { return mrs_; }
    conn_id connect(uint32_t peer_addr, uint64_t now_ns) override;
    post_result post_send(conn_id c, const send_wr& wr, uint64_t now_ns) override;
    post_result post_recv(conn_id, uint16_t, const recv_wr&) override
    {
        return post_result::bad_stream; // SEND is not modelled
    }
    size_t poll_cq(std::span<completion> out) override;
    size_t poll_events(std::span<conn_event> out) override;

    void on_packet(const rx_meta& meta, std::span<const uint8_t> bytes, uint64_t now_ns) override;
    bool poll_tx(uint64_t now_ns, tx_frame& frame) override;
    uint64_t next_timer() const noexcept override;
    void on_timer(uint64_t now_ns) override;

    const counters& stats() const noexcept override { return stats_; }
    std::optional<conn_id> peer_conn(conn_id c) const override;
    size_t state_bytes(conn_id c) const override;
    std::vector<std::pair<std::string, uint64_t>> extra_counters() const override;

    // For tests: the current DCQCN rate of a QP.
    double rate_gbps(conn_id c) const;

private:
    struct wqe {
        uint64_t wr_id = 0;
        const uint8_t* src = nullptr;
        uint32_t len = 0;
        uint64_t remote_va = 0;
        uint32_t rkey = 0;
        uint32_t first_psn = 0;
        uint32_t packets = 0;
        bool signaled = true;
    };
    struct qp {
        conn_id id = k_no_conn;
        uint32_t peer_addr = 0;
        conn_id peer_qp = k_no_conn;
        conn_state state = conn_state::connecting;
        bool incoming = false;
        uint8_t plane = 0;
        uint16_t sport = 0;
        // requester
        std::deque<wqe> sq;           // posted, not yet acknowledged
        size_t cursor = 0;            // sq index holding snd_nxt
        uint32_t psn_end = 0;         // PSN after the last posted packet
        uint32_t snd_nxt = 0;
        uint32_t snd_una = 0;
        uint32_t snd_max = 0;         // one past the highest PSN ever sent
        uint32_t since_ack_req = 0;   // bytes since the last ack_req flag
        double next_tx_ns = 0;        // pacing
        bool tx_queued = false;
        uint64_t rto_at = UINT64_MAX;
        uint32_t retries = 0;
        uint64_t cm_at = UINT64_MAX;  // CM_REQ retry
        dcqcn cc;
        // responder
        uint32_t epsn = 0;
        bool nak_sent = false;
        uint64_t last_cnp_ns = 0;
        bool cnp_ever = false;
        uint8_t* cur_dst = nullptr;   // current WRITE: where the next byte goes
        uint64_t cur_left = 0;
        uint64_t timer_at = UINT64_MAX;  // earliest deadline pushed on the heap

        explicit qp(const dcqcn_params& p) : cc(p) {}
    };
    struct ctrl_pkt {
        uint32_t dst_addr = 0;
        uint8_t plane = 0;
        uint16_t sport = 0;
        uint8_t len = 0;
        uint8_t bytes[k_cm_len > k_cnp_len ? k_cm_len : k_cnp_len] = {};
    };
    struct due {
        uint64_t at;
        uint32_t qp;
        bool operator>(const due& o) const noexcept { return at != o.at ? at > o.at : qp > o.qp; }
    };
    using min_heap = std::priority_queue<due, std::vector<due>, std::greater<>>;

    qp* find(conn_id c) noexcept;
    const qp* find(conn_id c) const noexcept;
    qp& make_qp(uint32_t peer, bool incoming, uint8_t plane);
    uint16_t entropy(conn_id c) const noexcept;
    void queue_ctrl(const qp& q, op o, uint32_t psn, const uint8_t* body, uint32_t body_len);
    void schedule_tx(qp& q);
    void rearm(qp& q);
    void fail(qp& q, wc_status why);
    void complete_upto(qp& q, uint32_t una);
    void go_back(qp& q, uint32_t psn);
    void rewind_cursor(qp& q);
    bool build_data(qp& q, uint64_t now_ns, tx_frame& f);
    void qp_timer(qp& q, uint64_t now_ns);
    // responder.cpp
    void on_data(qp& q, const bth& h, const rx_meta& m, std::span<const uint8_t> b, uint64_t now_ns);
    void on_cm(const bth& h, const rx_meta& m, std::span<const uint8_t> b, uint64_t now_ns);
    // requester.cpp
    void on_ack(qp& q, const bth& h, std::span<const uint8_t> b, uint64_t now_ns);

    params p_;
    mr_table mrs_;
    std::vector<std::unique_ptr<qp>> qps_;  // QP number n at index n - 1
    std::unordered_map<uint64_t, conn_id> by_peer_;  // (peer addr, peer QP) -> ours
    std::deque<ctrl_pkt> ctrl_;
    min_heap tx_heap_;
    min_heap timer_heap_;
    uint64_t last_seen_ns_ = 0;  // latest time any call brought
    std::deque<completion> cq_;
    std::deque<conn_event> events_;
    counters stats_;
    extra_stats extra_;
};

} // namespace metaroce::sim::rocev2
