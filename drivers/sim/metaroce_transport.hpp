// The real MetaRoCE core behind the simulator's transport interface: every call
// forwards to metaroce::endpoint unchanged.
#pragma once

#include "metaroce/endpoint.hpp"
#include "sim/transport.hpp"

namespace metaroce::sim {

class metaroce_transport final : public sim_transport {
public:
    explicit metaroce_transport(const endpoint_config& cfg) : ep_(cfg) {}

    endpoint& core() noexcept { return ep_; }
    const endpoint& core() const noexcept { return ep_; }

    mr_table& memory() noexcept override { return ep_.memory(); }
    conn_id connect(uint32_t peer, uint64_t now) override { return ep_.connect(peer, now); }
    post_result post_send(conn_id c, const send_wr& wr, uint64_t now) override
    {
        return ep_.post_send(c, wr, now);
    }
    post_result post_recv(conn_id c, uint16_t stream, const recv_wr& wr) override
    {
        return ep_.post_recv(c, stream, wr);
    }
    size_t poll_cq(std::span<completion> out) override { return ep_.poll_cq(out); }
    size_t poll_events(std::span<conn_event> out) override { return ep_.poll_events(out); }
    void on_packet(const rx_meta& m, std::span<const uint8_t> b, uint64_t now) override
    {
        ep_.on_packet(m, b, now);
    }
    bool poll_tx(uint64_t now, tx_frame& f) override { return ep_.poll_tx(now, f); }
    uint64_t next_timer() const noexcept override { return ep_.next_timer(); }
    void on_timer(uint64_t now) override { ep_.on_timer(now); }
    const counters& stats() const noexcept override { return ep_.stats(); }
    std::optional<conn_id> peer_conn(conn_id c) const override
    {
        const auto info = ep_.inspect(c);
        if (!info) {
            return std::nullopt;
        }
        return info->peer_conn;
    }
    size_t state_bytes(conn_id c) const override
    {
        const auto info = ep_.inspect(c);
        return info ? info->state_bytes : 0;
    }
    size_t pool_peak_bytes() const override { return ep_.pools().peak_bytes; }

private:
    endpoint ep_;
};

} // namespace metaroce::sim
