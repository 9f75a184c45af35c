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
        {"handoff_out", c.handoff_out},
        {"handoff_in", c.handoff_in},
        {"handoff_drops", c.handoff_drops},
        {"timer_calls", c.timer_calls},
    };
    nlohmann::json drops = nlohmann::json::object();
    for (size_t i = 1; i < c.rx_drops.size(); ++i) {
        drops[std::string(to_string(rx_drop(i)))] = c.rx_drops[i];
    }
    j["rx_drops"] = drops;
    return j;
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
