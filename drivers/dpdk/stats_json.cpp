#include "dpdk/stats_json.hpp"

#include "common/counters_json.hpp"
#include "dpdk/port.hpp"

namespace metaroce::dpdk {

nlohmann::json to_json(const stage_times& t)
{
    // ns from TSC cycles; per call and per item (frame), as the loop saw them.
    const double ns_per_cycle = 1e9 / double(rte_get_tsc_hz());
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < t.s.size(); ++i) {
        const stage_times::one& o = t.s[i];
        const double ns = double(o.cycles) * ns_per_cycle;
        j[k_stage_names[i]] = {{"calls", o.calls}, {"items", o.items}, {"ns_total", uint64_t(ns)},
                               {"ns_per_call", o.calls ? ns / double(o.calls) : 0.0},
                               {"ns_per_item", o.items ? ns / double(o.items) : 0.0},
                               {"max_ns", uint64_t(double(o.max_cycles) * ns_per_cycle)},
                               {"descheduled_calls", o.calls - o.trim_calls},
                               {"trimmed_ns_per_item", o.trim_items ? double(o.trim_cycles) * ns_per_cycle / double(o.trim_items) : 0.0},
                               {"trimmed_ns_per_call", o.trim_calls ? double(o.trim_cycles) * ns_per_cycle / double(o.trim_calls) : 0.0}};
    }
    return j;
}

nlohmann::json to_json(const worker_counters& c)
{
    return common::counters_json<nlohmann::json>(c, worker_counter_fields());
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
    return common::counters_json<nlohmann::json>(c);
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
        {"rate_hint_mbps", c.rate_hint_mbps},
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
