#include "sim/simulator.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "metaroce/wire/codec.hpp"
#include "sim/analysis.hpp"
#include "sim/link_summary.hpp"
#include "sim/rocev2/wire.hpp"
#include "sim/scenario_json.hpp"
#include "sim/traffic_pattern.hpp"

namespace metaroce::sim {

namespace {
// Connections and registered regions each host carries, to size its tables.
std::vector<host_load> plan_load(const scenario& s)
{
    std::vector<host_load> load(s.topology.hosts);
    auto conns = plan_connections(s);
    if (const auto v = victim_pair(s)) {
        conns.push_back(*v);
    }
    const uint32_t slots = s.workload.outstanding + 1;
    for (const auto& [from, to] : conns) {
        ++load[from].connections;
        ++load[to].connections;
        load[from].regions += slots;
        load[to].regions += slots + 1;
    }
    return load;
}
} // namespace

simulator::simulator(scenario s)
    : s_(std::move(s)),
      pool_(std::max<size_t>(wire::max_packet_len(s_.transport.mtu),
                             rocev2::max_packet_len(s_.transport.mtu))),
      net_(s_, q_, pool_),
      meter_(from_ns(s_.timeline_ns), s_.topology.hosts, s_.topology.planes)
{
    const auto load = plan_load(s_);
    for (uint32_t h = 0; h < s_.topology.hosts; ++h) {
        hosts_.push_back(std::make_unique<host>(h, s_, load[h], q_, net_, pool_));
    }
    work_ = std::make_unique<workload>(s_, hosts_);
    for (auto& h : hosts_) {
        h->set_listener(work_.get());
        h->set_meter(&meter_);
    }
    std::set<uint32_t> sinks;
    for (const auto& [from, to] : plan_connections(s_)) {
        sinks.insert(s_.workload.op == wr_opcode::read ? from : to);
    }
    for (uint32_t p = 0; p < s_.topology.planes; ++p) {
        for (uint32_t h : sinks) {
            last_hop_links_.push_back(net_.topo().host_down(p, h));
        }
    }
    q_.push(from_ns(s_.timeline_ns), event_kind::sample, 0);
    for (uint32_t i = 0; i < s_.events.size(); ++i) {
        q_.push(from_ns(s_.events[i].at_ns), event_kind::fault, i);
    }
}

simulator::~simulator() = default;

void simulator::dispatch(const event& e)
{
    switch (e.kind) {
    case event_kind::arrival:
        if (net_.on_arrival(e.a, e.b, e.time) == hop_result::delivered) {
            hosts_[pool_.meta(e.a).dst_host]->on_packet(e.a, e.time);
        }
        break;
    case event_kind::host_timer:
        hosts_[e.a]->on_timer_event(e.time, e.time);
        break;
    case event_kind::tx_wake:
        hosts_[e.a]->on_tx_wake(e.time, e.time);
        break;
    case event_kind::fault:
        net_.apply(s_.events[e.a]);
        break;
    case event_kind::sample:
        sample(e.time);
        break;
    }
}

void simulator::sample(sim_time now)
{
    uint64_t q = 0;
    for (uint32_t id : last_hop_links_) {
        q = std::max(q, net_.topo().at(id).backlog_bytes(now));
    }
    // Stamped into the bin that ends here.
    meter_.sample_queue(now - 1, q);
    // Only while something else is pending, so an idle run still ends.
    if (!q_.empty()) {
        q_.push(now + from_ns(s_.timeline_ns), event_kind::sample, 0);
    }
}

sim_result simulator::run()
{
    const auto wall_start = std::chrono::steady_clock::now();
    const sim_time limit = from_ns(s_.duration_ns.value_or(k_default_time_limit_ns));
    work_->start(0);
    const char* reason = "idle";
    while (true) {
        if (work_->done()) {
            reason = "done";
            break;
        }
        if (q_.empty()) {
            break;
        }
        if (q_.next_time() > limit) {
            now_ = limit;
            reason = s_.duration_ns ? "duration" : "time_limit";
            break;
        }
        const event e = q_.pop();
        now_ = e.time;
        ++events_;
        ++by_kind_[size_t(e.kind)];
        dispatch(e);
        // Sampled, not per event: the pool size is a cheap proxy for in-flight packets.
        if ((events_ & 1023) == 0) {
            peak_in_flight_ = std::max<uint64_t>(peak_in_flight_, pool_.in_use());
            if (progress_ && (events_ & (k_progress_events - 1)) == 0) {
                const auto& w = work_->stats();
                progress_({now_, limit, s_.duration_ns.has_value(), events_,
                           w.messages_completed + w.messages_failed, w.messages_total});
            }
        }
    }
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_start;
    return collect(reason, wall.count());
}

sim_result simulator::collect(const char* stop_reason, double wall_s) const
{
    sim_result r;
    r.name = s_.name;
    r.protocol = std::string(to_string(s_.protocol.kind));
    r.seed = s_.seed;
    r.stop_reason = stop_reason;
    r.work = work_->stats();
    r.work.fct_us.clear();
    r.fct = summarize_fct(work_->stats().fct_us);
    r.connections = work_->connections();
    r.net = net_.stats();
    for (const auto& h : hosts_) {
        accumulate(r.hosts, h->ep().stats());
        r.bad_tx_frames += h->stats().bad_tx_frames;
    }
    r.peak_packets_in_flight = peak_in_flight_;
    const auto& w = r.work;
    r.completed = w.messages_completed == w.messages_total;
    r.data_verified = r.completed && w.messages_verified == w.messages_total &&
                      w.data_mismatches == 0 && w.recv_mismatches == 0;
    if (w.messages_completed > 0 && w.last_completion > w.first_post) {
        r.goodput_gbps = double(w.payload_bytes) * 8 * 1000 / double(w.last_completion - w.first_post);
    }
    r.loss_free_bound_gbps = loss_free_bound_gbps(s_);
    r.virtual_time_us = to_us(now_);
    r.wall_time_s = wall_s;
    r.events = events_;
    r.events_by_kind = by_kind_;
    r.events_per_second = wall_s > 0 ? double(events_) / wall_s : 0;
    analyze(s_, meter_, net_, r);
    summarize_links(net_.topo(), s_.long_haul, r);
    // Transport state per connection, from the initiator's side of each one.
    double state = 0;
    const size_t n = work_->pattern_connections();
    for (size_t i = 0; i < n; ++i) {
        const auto [h, c] = work_->initiator(i);
        state += double(hosts_[h]->ep().state_bytes(c));
    }
    r.state_bytes_per_connection = n > 0 ? state / double(n) : 0;
    // At the end every connection is idle and holds no pool chunk: what the busy ones
    // held is the pools' high-water marks, over all hosts.
    double pooled = 0;
    for (const auto& h : hosts_) {
        pooled += double(h->ep().pool_peak_bytes());
    }
    r.pool_peak_bytes_per_connection = n > 0 ? pooled / double(n) : 0;
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    r.peak_rss_mb = double(ru.ru_maxrss) / 1024.0;
    for (const auto& h : hosts_) {
        for (const auto& [name, v] : h->ep().extra_counters()) {
            auto it = std::find_if(r.transport_extra.begin(), r.transport_extra.end(),
                                   [&](const auto& kv) { return kv.first == name; });
            if (it == r.transport_extra.end()) {
                r.transport_extra.emplace_back(name, v);
            } else {
                it->second += v;
            }
        }
    }
    return r;
}

} // namespace metaroce::sim
