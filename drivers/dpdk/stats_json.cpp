#include "dpdk/stats_json.hpp"

#include "dpdk/port.hpp"

namespace metaroce::dpdk {

nlohmann::json to_json(const worker_counters& c)
{
    nlohmann::json j = {
        {"loops", c.loops},
        {"busy_loops", c.busy_loops},
        {"rx_frames", c.rx_frames},
        {"rx_bytes", c.rx_bytes},
        {"tx_frames", c.tx_frames},
        {"tx_bytes", c.tx_bytes},
        {"rx_not_ours", c.rx_not_ours},
        {"rx_plane_down", c.rx_plane_down},
        {"rx_linearized", c.rx_linearized},
        {"tx_plane_down", c.tx_plane_down},
        {"tx_no_mbuf", c.tx_no_mbuf},
        {"tx_bad_frame", c.tx_bad_frame},
        {"tx_queue_full", c.tx_queue_full},
        {"tx_port_stalled", c.tx_port_stalled},
        {"handoff_out", c.handoff_out},
        {"handoff_in", c.handoff_in},
        {"handoff_drops", c.handoff_drops},
        {"timer_calls", c.timer_calls},
        {"max_poll_gap_ns", c.max_poll_gap_ns},
        {"max_tx_burst_ns", c.max_tx_burst_ns},
    };
    nlohmann::json drops = nlohmann::json::object();
    for (size_t i = 1; i < c.rx_drops.size(); ++i) {
        drops[std::string(to_string(rx_drop(i)))] = c.rx_drops[i];
    }
    j["rx_drops"] = drops;
    j["plane_rx_frames"] = c.plane_rx_frames;
    j["plane_tx_frames"] = c.plane_tx_frames;
    return j;
}

nlohmann::json to_json(const plane_log& log, size_t planes, int64_t wall_offset_ns)
{
    // Times as wall-clock ns (so scripts can line them up with their own actions)
    // and, per plane, microseconds relative to the event (null: no send).
    const auto rel_us = [](uint64_t t, uint64_t at) -> nlohmann::json {
        if (t == 0) {
            return nullptr;
        }
        return (double(t) - double(at)) / 1e3;
    };
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < log.size(); ++i) {
        const plane_event& e = log[i];
        nlohmann::json first = nlohmann::json::array();
        nlohmann::json last = nlohmann::json::array();
        nlohmann::json tx_at = nlohmann::json::array();
        nlohmann::json rx_at = nlohmann::json::array();
        for (size_t p = 0; p < planes && p < k_max_planes; ++p) {
            first.push_back(rel_us(e.first_tx_ns[p], e.t_ns));
            last.push_back(rel_us(e.last_tx_ns[p], e.t_ns));
            tx_at.push_back(e.tx_at[p]);
            rx_at.push_back(e.rx_at[p]);
        }
        out.push_back({{"t_ns", e.t_ns},
                       {"wall_ns", int64_t(e.t_ns) + wall_offset_ns},
                       {"plane", e.plane},
                       {"up", e.up},
                       {"cause", e.cause == plane_cause::detected ? "detected" : "admin"},
                       {"first_tx_after_us", first},
                       {"last_tx_before_us", last},
                       {"tx_frames_at", tx_at},
                       {"rx_frames_at", rx_at}});
    }
    return out;
}

nlohmann::json to_json(const counters& c)
{
    nlohmann::json j = {
        {"rx_packets", c.rx_packets},
        {"rx_bytes", c.rx_bytes},
        {"tx_packets", c.tx_packets},
        {"tx_bytes", c.tx_bytes},
        {"tx_data_packets", c.tx_data_packets},
        {"tx_payload_bytes", c.tx_payload_bytes},
        {"rx_payload_bytes", c.rx_payload_bytes},
        {"tx_acks", c.tx_acks},
        {"rx_acks", c.rx_acks},
        {"tx_naks", c.tx_naks},
        {"rx_naks", c.rx_naks},
        {"retransmits", c.retransmits},
        {"timeouts", c.timeouts},
        {"reroutes", c.reroutes},
        {"rx_ce", c.rx_ce},
        {"rx_duplicates", c.rx_duplicates},
        {"rx_beyond_window", c.rx_beyond_window},
        {"rx_unknown_conn", c.rx_unknown_conn},
        {"rx_wrong_peer", c.rx_wrong_peer},
        {"rx_bad_path", c.rx_bad_path},
        {"rx_invalid", c.rx_invalid},
        {"rx_stale_ack", c.rx_stale_ack},
        {"rx_rnr", c.rx_rnr},
        {"rx_access_errors", c.rx_access_errors},
        {"completions", c.completions},
        {"conn_errors", c.conn_errors},
        {"rx_malformed", c.rx_malformed_total()},
        {"tail_probes", c.tail_probes},
        {"probes_sent", c.probes_sent},
        {"probe_acks", c.probe_acks},
        {"plane_downs", c.plane_downs},
        {"plane_ups", c.plane_ups},
        {"cookies_sent", c.cookies_sent},
        {"rx_bad_cookie", c.rx_bad_cookie},
        {"rx_bad_token", c.rx_bad_token},
        {"rx_bad_shape", c.rx_bad_shape},
        {"keepalives", c.keepalives},
        {"conns_expired", c.conns_expired},
        {"conns_reaped", c.conns_reaped},
    };
    return j;
}

nlohmann::json to_json(const conn_info& c, bool with_paths)
{
    nlohmann::json j = {
        {"id", c.id},
        {"peer_conn", c.peer_conn},
        {"peer", format_ipv4(c.peer_addr)},
        {"state", std::string(to_string(c.state))},
        {"incoming", c.incoming},
        {"paths", c.paths},
        {"mtu", c.mtu},
        {"streams", c.streams},
        {"conn_cwnd", c.conn_cwnd},
        {"inflight", c.inflight},
        {"outstanding_msgs", c.outstanding_msgs},
        {"tx_msgs_completed", c.tx_msgs_completed},
        {"rx_msgs_committed", c.rx_msgs_committed},
        {"state_bytes", c.state_bytes},
    };
    if (with_paths) {
        nlohmann::json paths = nlohmann::json::array();
        for (const auto& p : c.path) {
            paths.push_back({
                {"index", p.index},
                {"plane", p.plane},
                {"udp_sport", p.udp_sport},
                {"state", path_state_name(p.state)},
                {"home_plane", p.home_plane},
                {"cwnd", p.cwnd},
                {"inflight", p.inflight},
                {"next_psn", p.next_psn},
                {"una", p.una},
                {"rx_expected", p.rx_expected},
                {"srtt_ns", p.srtt_ns},
                {"rto_ns", p.rto_ns},
                {"timeouts", p.timeouts},
                {"tx_packets", p.tx_packets},
                {"retransmits", p.retransmits},
                {"acked_ce", p.acked_ce},
                {"acked_rx", p.acked_rx},
            });
        }
        j["path"] = paths;
    }
    return j;
}

} // namespace metaroce::dpdk
