#include "sim/result.hpp"

#include <algorithm>
#include <cmath>

#include "common/counters_json.hpp"

namespace metaroce::sim {

namespace {
// Nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double p)
{
    const auto rank = size_t(std::ceil(p * double(sorted.size())));
    return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// Three decimals keep the output readable and stable across libm versions.
double round3(double v)
{
    return std::round(v * 1000) / 1000;
}
} // namespace

fct_summary summarize_fct(std::vector<double> samples)
{
    fct_summary f;
    if (samples.empty()) {
        return f;
    }
    std::sort(samples.begin(), samples.end());
    f.p50_us = percentile(samples, 0.50);
    f.p99_us = percentile(samples, 0.99);
    f.max_us = samples.back();
    return f;
}

void accumulate(counters& into, const counters& c) noexcept
{
    add_counters(into, c, counter_fields());
}

namespace {
nlohmann::ordered_json opt(const std::optional<double>& v)
{
    return v ? nlohmann::ordered_json(round3(*v)) : nlohmann::ordered_json(nullptr);
}

std::vector<double> rates(const std::vector<uint64_t>& bytes, double interval_us)
{
    std::vector<double> out;
    out.reserve(bytes.size());
    for (uint64_t b : bytes) {
        out.push_back(round3(double(b) * 8 / (interval_us * 1e3)));
    }
    return out;
}

void add_metrics(nlohmann::ordered_json& j, const sim_result& r)
{
    j["completion_time_us"] = round3(r.completion_time_us);
    j["base_rtt_us"] = round3(r.base_rtt_us);
    j["jain_index"] = opt(r.jain_index);
    j["jain_basis"] = "per-sender goodput while every sender is active";
    j["convergence_rtts"] = opt(r.convergence_rtts);
    j["convergence_from_post_rtts"] = opt(r.convergence_from_post_rtts);
    j["convergence_window_rtts"] = round3(r.convergence_window_rtts);
    j["max_queue_bytes"] = {{"peak_switch", r.queue.peak_switch_bytes},
                            {"peak_last_hop", r.queue.peak_last_hop_bytes},
                            {"steady_last_hop", std::round(r.queue.steady_last_hop_bytes)},
                            {"bdp", r.queue.bdp_bytes}};
    if (r.victim) {
        j["victim"] = {{"gbps", round3(r.victim->gbps)},
                       {"bytes", r.victim->bytes},
                       {"completed", r.victim->completed},
                       {"verified", r.victim->verified}};
    } else {
        j["victim"] = nullptr;
    }
    if (r.recovery) {
        const auto& v = *r.recovery;
        j["recovery"] = {{"fault_at_us", round3(v.fault_at_us)},
                         {"before_gbps", round3(v.before_gbps)},
                         {"target_gbps", round3(v.target_gbps)},
                         {"after_gbps", round3(v.after_gbps)},
                         {"min_gbps", round3(v.min_gbps)},
                         {"time_to_recover_us", opt(v.time_to_recover_us)}};
    } else {
        j["recovery"] = nullptr;
    }
    j["state_bytes_per_connection"] = std::round(r.state_bytes_per_connection);
    j["pool_peak_bytes_per_connection"] = std::round(r.pool_peak_bytes_per_connection);
    j["peak_rss_mb"] = round3(r.peak_rss_mb);
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (const auto& [name, v] : r.transport_extra) {
        extra[name] = v;
    }
    j["transport_extra"] = extra;
    nlohmann::ordered_json planes = nlohmann::ordered_json::array();
    for (const auto& p : r.timeline.plane_bytes) {
        planes.push_back(rates(p, r.timeline.interval_us));
    }
    j["placed_bytes"] = r.placed_bytes;
    // Per connection (in plan order: pair i % pairs) and per link, for --breakdown.
    nlohmann::ordered_json done = nlohmann::ordered_json::array();
    for (const sim_time t : r.work.conn_done) {
        done.push_back(t > r.work.first_post ? round3(to_us(t - r.work.first_post)) : 0.0);
    }
    j["breakdown"] = {{"conn_done_us", done},
                      {"leaf_up_bytes", r.spread.leaf_up_bytes},
                      {"host_up_bytes", r.spread.host_up_bytes}};
    j["timeline"] = {{"interval_us", round3(r.timeline.interval_us)},
                     {"goodput_gbps", rates(r.timeline.bytes, r.timeline.interval_us)},
                     {"plane_gbps", planes},
                     {"last_hop_queue_bytes", r.timeline.last_hop_queue_bytes}};
}
} // namespace

nlohmann::ordered_json to_json(const sim_result& r)
{
    const auto& w = r.work;
    const auto& h = r.hosts;
    nlohmann::ordered_json j;
    j["scenario"] = r.name;
    j["protocol"] = r.protocol;
    j["seed"] = r.seed;
    j["stop_reason"] = r.stop_reason;
    j["completed"] = r.completed;
    j["data_verified"] = r.data_verified;
    j["goodput_gbps"] = round3(r.goodput_gbps);
    j["loss_free_bound_gbps"] = round3(r.loss_free_bound_gbps);
    j["fct_us"] = {{"p50", round3(r.fct.p50_us)}, {"p99", round3(r.fct.p99_us)},
                   {"max", round3(r.fct.max_us)}};
    j["messages"] = {{"total", w.messages_total},
                     {"completed", w.messages_completed},
                     {"verified", w.messages_verified},
                     {"failed", w.messages_failed},
                     {"data_mismatches", w.data_mismatches},
                     {"recv_completions", w.recv_completions},
                     {"recv_mismatches", w.recv_mismatches}};
    j["payload_bytes"] = w.payload_bytes;
    j["connections"] = r.connections;
    j["connection_errors"] = r.connection_errors();
    j["connection_errors_detail"] = {{"error_events", w.conn_error_events},
                                     {"error_completions", w.error_completions},
                                     {"connect_failures", w.connect_failures},
                                     {"post_failures", w.post_failures},
                                     {"recv_post_failures", w.recv_post_failures}};
    j["retransmitted_packets"] = h.retransmits;
    j["timeouts"] = h.timeouts;
    j["reroutes"] = h.reroutes;
    j["dropped_packets"] = r.net.drops();
    j["drops"] = {{"loss_model", r.net.loss_drops},
                  {"buffer", r.net.buffer_drops},
                  {"failure", r.net.failure_drops}};
    j["ecn_marked"] = r.net.ecn_marked;
    j["fabric_packets"] = {{"injected", r.net.injected},
                           {"delivered", r.net.delivered},
                           {"bad_tx_frames", r.bad_tx_frames},
                           {"peak_in_flight", r.peak_packets_in_flight}};
    j["endpoints"] = common::counters_json<nlohmann::ordered_json>(h);
    j["virtual_time_us"] = round3(r.virtual_time_us);
    j["events"] = r.events;
    j["events_by_kind"] = {{"arrival", r.events_by_kind[size_t(event_kind::arrival)]},
                           {"host_timer", r.events_by_kind[size_t(event_kind::host_timer)]},
                           {"tx_wake", r.events_by_kind[size_t(event_kind::tx_wake)]},
                           {"fault", r.events_by_kind[size_t(event_kind::fault)]},
                           {"sample", r.events_by_kind[size_t(event_kind::sample)]}};
    add_metrics(j, r);
    j["spread"] = {{"plane_tx_bytes", r.spread.plane_tx_bytes},
                   {"leaf_up_max_over_mean", round3(r.spread.leaf_up_max_over_mean)},
                   {"host_up_max_over_mean", round3(r.spread.host_up_max_over_mean)}};
    if (!r.long_haul.empty()) {
        nlohmann::ordered_json routes = nlohmann::ordered_json::array();
        for (const auto& x : r.long_haul) {
            routes.push_back({{"plane", x.plane}, {"spine", x.spine}, {"from_site", x.from_site},
                              {"gbps", x.gbps}, {"tx_bytes", x.tx_bytes},
                              {"ecn_marked", x.ecn_marked}, {"buffer_drops", x.buffer_drops},
                              {"max_backlog_bytes", x.max_backlog_bytes}});
        }
        j["long_haul"] = routes;
    }
    j["wall_time_s"] = round3(r.wall_time_s);
    j["events_per_second"] = std::round(r.events_per_second);
    return j;
}

} // namespace metaroce::sim
