#include "sim/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "metaroce/wire/codec.hpp"
#include "sim/traffic_pattern.hpp"
#include "sim/wire_size.hpp"

namespace metaroce::sim {

namespace {

constexpr double k_band = 0.10;          // "within 10 % of the fair share"
constexpr double k_window_packets = 20;  // a window carries >= this many fair-share packets
constexpr uint64_t k_recovery_avg_ns = 200'000; // goodput counts whole messages: average over several
constexpr uint64_t k_settle_ns = 1'000'000; // after_gbps starts 1 ms after the fault

// The host a connection's data leaves from: the initiator, or with READ the target.
uint32_t data_source(const scenario& s, const std::pair<uint32_t, uint32_t>& conn)
{
    return s.workload.op == wr_opcode::read ? conn.second : conn.first;
}

std::set<uint32_t> data_sources(const scenario& s)
{
    std::set<uint32_t> out;
    for (const auto& conn : plan_connections(s)) {
        out.insert(data_source(s, conn));
    }
    return out;
}

std::set<uint32_t> data_sinks(const scenario& s)
{
    std::set<uint32_t> out;
    for (const auto& [from, to] : plan_connections(s)) {
        out.insert(s.workload.op == wr_opcode::read ? from : to);
    }
    return out;
}

uint64_t at(const std::vector<uint64_t>& v, size_t i) { return i < v.size() ? v[i] : 0; }

double gbps(uint64_t bytes, uint64_t ns) { return ns == 0 ? 0 : double(bytes) * 8 / double(ns); }

// First bin in which `src` placed anything, or 0.
size_t first_bin(const std::vector<uint64_t>& v)
{
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] != 0) {
            return i;
        }
    }
    return 0;
}

// Last bin in which `src` placed anything, or 0.
size_t last_bin(const std::vector<uint64_t>& v)
{
    for (size_t i = v.size(); i > 0; --i) {
        if (v[i - 1] != 0) {
            return i - 1;
        }
    }
    return 0;
}

void jain_and_convergence(const scenario& s, const goodput_meter& m, sim_result& r)
{
    const auto sources = data_sources(s);
    if (sources.empty() || r.work.first_post == k_never) {
        return;
    }
    const size_t b0 = size_t(r.work.first_post / m.bin());
    // Horizon: the bin in which the first sender finished; before it all compete.
    size_t horizon = SIZE_MAX;
    for (uint32_t src : sources) {
        horizon = std::min(horizon, last_bin(m.source(src)));
    }
    std::vector<double> x;
    for (uint32_t src : sources) {
        uint64_t sum = 0;
        const auto& v = m.source(src);
        const size_t end = horizon > b0 ? horizon : v.size();
        for (size_t i = b0; i < end; ++i) {
            sum += at(v, i);
        }
        x.push_back(double(sum));
    }
    double sum = 0;
    double sq = 0;
    for (double v : x) {
        sum += v;
        sq += v * v;
    }
    if (sq > 0) {
        r.jain_index = sum * sum / (double(x.size()) * sq);
    }
    if (s.workload.pattern != pattern_kind::incast || horizon <= b0) {
        return;
    }
    // Fair share per bin at the sink, and a window long enough to count it.
    const double fair = r.loss_free_bound_gbps / double(sources.size()) * double(m.bin()) / 8000.0;
    const double rtt_bins = r.base_rtt_us * 1e6 / double(m.bin());
    const double pkt_bins = k_window_packets * s.transport.mtu / fair;
    const auto w = size_t(std::ceil(std::max({1.0, rtt_bins, pkt_bins})));
    r.convergence_window_rtts = double(w) * double(m.bin()) / (r.base_rtt_us * 1e6);
    if (b0 + w > horizon) {
        return;
    }
    std::vector<std::vector<uint64_t>> prefix;
    for (uint32_t src : sources) {
        const auto& v = m.source(src);
        std::vector<uint64_t> p(horizon + 1, 0);
        for (size_t i = 0; i < horizon; ++i) {
            p[i + 1] = p[i] + at(v, i);
        }
        prefix.push_back(std::move(p));
    }
    const double lo = (1 - k_band) * fair * double(w);
    const double hi = (1 + k_band) * fair * double(w);
    // Earliest window start from which every later window is in band for all.
    std::optional<size_t> t0;
    for (size_t t = horizon - w + 1; t-- > b0;) {
        bool ok = true;
        for (const auto& p : prefix) {
            const double got = double(p[t + w] - p[t]);
            if (got < lo || got > hi) {
                ok = false;
                break;
            }
        }
        if (!ok) {
            break;
        }
        t0 = t;
    }
    if (t0) {
        // sim_time is in picoseconds, like the bins. Counted from the first post, and
        // from the moment the last sender started sending: its first bytes' arrival less
        // the one-way base delay (connection set-up is not the incast's to resolve).
        const double rtt_ps = r.base_rtt_us * 1e6;
        const double end_ps = double(*t0 * m.bin());
        double last_start_ps = double(r.work.first_post);
        for (uint32_t src : sources) {
            last_start_ps = std::max(last_start_ps, double(first_bin(m.source(src)) * m.bin()) - rtt_ps / 2);
        }
        r.convergence_from_post_rtts = std::max(0.0, end_ps - double(r.work.first_post)) / rtt_ps;
        r.convergence_rtts = std::max(0.0, end_ps - last_start_ps) / rtt_ps;
    }
}

void queues(const scenario& s, const goodput_meter& m, const fabric& net, sim_result& r)
{
    const auto& topo = net.topo();
    const auto sinks = data_sinks(s);
    for (uint32_t id = 0; id < topo.links().size(); ++id) {
        const link& l = topo.at(id);
        if (l.kind == link_kind::host_up) {
            continue; // host NICs are paced by their driver, not switch queues
        }
        r.queue.peak_switch_bytes = std::max(r.queue.peak_switch_bytes, l.stats.max_backlog_bytes);
        if (l.kind == link_kind::host_down && sinks.contains(l.to)) {
            r.queue.peak_last_hop_bytes =
                std::max(r.queue.peak_last_hop_bytes, l.stats.max_backlog_bytes);
        }
    }
    r.queue.bdp_bytes = uint64_t(s.topology.link_gbps * r.base_rtt_us * 1e3 / 8);
    const auto& q = m.queue();
    if (r.work.first_post != k_never && r.work.last_completion > r.work.first_post) {
        const size_t a = size_t(r.work.first_post / m.bin());
        const size_t b = std::min(q.size(), size_t(r.work.last_completion / m.bin()));
        const size_t mid = a + (b - a) / 2;
        double sum = 0;
        for (size_t i = mid; i < b; ++i) {
            sum += double(q[i]);
        }
        r.queue.steady_last_hop_bytes = b > mid ? sum / double(b - mid) : 0;
    }
}

void victim(const scenario& s, const goodput_meter& m, sim_result& r)
{
    const auto v = victim_pair(s);
    if (!v) {
        return;
    }
    victim_summary out;
    out.completed = r.work.victim_completed;
    out.verified = r.work.victim_verified;
    if (r.work.first_post != k_never && r.work.last_completion > r.work.first_post) {
        const auto& src = m.source(data_source(s, *v));
        const size_t a = size_t(r.work.first_post / m.bin());
        const size_t b = size_t(r.work.last_completion / m.bin());
        for (size_t i = a; i < b; ++i) {
            out.bytes += at(src, i);
        }
        out.gbps = gbps(out.bytes, (b - a) * m.bin() / k_ps_per_ns);
    }
    r.victim = out;
}

void recovery(const scenario& s, const goodput_meter& m, sim_result& r)
{
    const auto e = std::find_if(s.events.begin(), s.events.end(), [](const fault_event& f) {
        return f.action == fault_action::fail_plane;
    });
    if (e == s.events.end() || r.work.last_completion == 0) {
        return;
    }
    const uint64_t bin_ns = m.bin() / k_ps_per_ns;
    const auto& t = m.total();
    const size_t fb = size_t(e->at_ns / bin_ns);
    // Judge recovery while every sender still has data: once the first one finishes, the
    // offered load itself falls and says nothing about the fabric.
    size_t end = std::min(t.size(), size_t(r.work.last_completion / m.bin()));
    for (uint32_t src : data_sources(s)) {
        end = std::min(end, last_bin(m.source(src)));
    }
    if (fb == 0 || fb >= end) {
        return;
    }
    recovery_summary out;
    out.fault_at_us = double(e->at_ns) / 1e3;
    uint64_t before = 0;
    const size_t from = std::max<size_t>(fb / 2, size_t(r.work.first_post / m.bin()));
    for (size_t i = from; i < fb; ++i) {
        before += t[i];
    }
    out.before_gbps = gbps(before, (fb - from) * bin_ns);
    const double p = s.topology.planes;
    out.target_gbps = out.before_gbps * (p - 1) / p;
    const size_t avg = std::max<size_t>(1, k_recovery_avg_ns / bin_ns);
    std::vector<double> mov;
    for (size_t i = fb; i + avg <= end; ++i) {
        uint64_t sum = 0;
        for (size_t k = i; k < i + avg; ++k) {
            sum += t[k];
        }
        mov.push_back(gbps(sum, avg * bin_ns));
    }
    out.min_gbps = mov.empty() ? 0 : *std::min_element(mov.begin(), mov.end());
    for (size_t i = mov.size(); i-- > 0;) {
        if (mov[i] < out.target_gbps) {
            if (i + 1 < mov.size()) {
                out.time_to_recover_us = double((fb + i + 1) * bin_ns - e->at_ns) / 1e3;
            }
            break;
        }
        if (i == 0) {
            out.time_to_recover_us = 0;
        }
    }
    const size_t settle = fb + k_settle_ns / bin_ns;
    const size_t a = settle < end ? settle : fb;
    uint64_t after = 0;
    for (size_t i = a; i < end; ++i) {
        after += t[i];
    }
    out.after_gbps = gbps(after, (end - a) * bin_ns);
    r.recovery = out;
}

} // namespace

double base_rtt_ns(const scenario& s)
{
    const topology_params& t = s.topology;
    uint32_t hops = 2;
    bool across = false; // some pair crosses the long-haul links
    const auto site = [&](uint32_t host) {
        return s.long_haul.enabled() && host / t.hosts_per_leaf >= s.long_haul.site_b_leaf;
    };
    for (const auto& [from, to] : plan_connections(s)) {
        if (from / t.hosts_per_leaf != to / t.hosts_per_leaf) {
            hops = 4;
        }
        across = across || site(from) != site(to);
    }
    const double ns_per_byte = 8 / t.link_gbps;
    const double data = wire_bytes(uint32_t(wire::max_packet_len(s.transport.mtu))) * ns_per_byte;
    const double ack = k_min_frame_bytes * ns_per_byte + k_preamble_ifg_bytes * ns_per_byte;
    const double local = 2.0 * hops * double(t.link_delay_ns) + hops * (data + ack);
    if (!across) {
        return local;
    }
    const double lh_per_byte = 8 / s.long_haul.gbps;
    return local + 2.0 * double(s.long_haul.delay_ns) +
           wire_bytes(uint32_t(wire::max_packet_len(s.transport.mtu))) * lh_per_byte +
           (k_min_frame_bytes + k_preamble_ifg_bytes) * lh_per_byte;
}

void analyze(const scenario& s, const goodput_meter& m, const fabric& net, sim_result& r)
{
    r.base_rtt_us = base_rtt_ns(s) / 1e3;
    if (r.work.first_post != k_never && r.work.last_completion > r.work.first_post) {
        r.completion_time_us = to_us(r.work.last_completion - r.work.first_post);
    }
    r.placed_bytes = m.sum();
    r.timeline.interval_us = to_us(m.bin());
    r.timeline.bytes = m.total();
    r.timeline.plane_bytes.assign(m.planes(), std::vector<uint64_t>(m.bins(), 0));
    for (size_t b = 0; b < m.bins(); ++b) {
        for (uint32_t p = 0; p < m.planes(); ++p) {
            r.timeline.plane_bytes[p][b] = m.plane_bytes(b, p);
        }
    }
    r.timeline.last_hop_queue_bytes = m.queue();
    r.timeline.last_hop_queue_bytes.resize(m.bins(), 0);
    jain_and_convergence(s, m, r);
    queues(s, m, net, r);
    victim(s, m, r);
    recovery(s, m, r);
}

} // namespace metaroce::sim
