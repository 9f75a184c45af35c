// The prompt's "show" handlers: ports, connections, paths, planes and counters.
#include <rte_ethdev.h>

#include <algorithm>
#include <cstdio>

#include "app.hpp"
#include "commands.hpp"
#include "dpdk/port.hpp"
#include "dpdk/stats_json.hpp"

namespace metaroce::app {

void application::show_config(const args& a)
{
    if (a.size() != 2) {
        usage_error("show config", "no arguments expected");
    }
    const transport_config& t = cfg_.transport;
    std::printf("  node address: %s\n", dpdk::format_ipv4(cfg_.address).c_str());
    if (cfg_.udp) {
        std::printf("  backend: udp (kernel sockets, port %u)\n", cfg_.udp_port);
    }
    for (size_t p = 0; p < cfg_.ports.size(); ++p) {
        const bool routed = p < cfg_.gateways.size() && cfg_.gateways[p].has_value();
        std::printf("  plane %zu: port %u, address %s, %s\n", p, cfg_.ports[p],
                    dpdk::format_ipv4(dpdk::plane_ip(cfg_.address, uint8_t(p))).c_str(),
                    routed ? ("gateway " + dpdk::format_mac(*cfg_.gateways[p])).c_str() : "one hop");
    }
    std::printf("  datapath %s, static peers: %zu, mbufs: %u, max connections: %u\n",
                lanes_.size() == 1 ? ("lcore: " + std::to_string(dp_->lcore())).c_str()
                                   : (std::to_string(lanes_.size()) + " workers, " + lcores_text()).c_str(),
                cfg_.peers.size(), cfg_.mbufs, cfg_.max_connections);
    std::printf("  UDP checksum: %s\n", cfg_.udp_checksum_software ? "software" : "offload when offered");
    std::printf("  transport: mtu %u, paths %u, max streams %u, max msgs %u, rq depth %u, max reads %u\n", t.mtu,
                t.paths, t.max_streams, t.max_msgs, t.rq_depth, t.max_reads);
    std::printf("  timers: initial rtt %llu us, rto %llu..%llu us, max timeouts %u\n",
                (unsigned long long)(t.initial_rtt_ns / 1000), (unsigned long long)(t.min_rto_ns / 1000),
                (unsigned long long)(t.max_rto_ns / 1000), t.max_timeouts);
    engines::test_kind k{};
    dp_->call([&] { k = dp_->engines().test(); });
    std::printf("  forwarding: %s, message size %llu, tx depth %u, %s\n", engines::test_name(k),
                (unsigned long long)cfg_.message_size, cfg_.tx_depth, started_ ? "started" : "stopped");
}

void application::show_conn(const args& a)
{
    const bool json = !a.empty() && a.back() == "json";
    const size_t n = a.size() - (json ? 1 : 0);
    if (n > 3) {
        usage_error("show conn [<id>] [json]", "too many arguments");
    }
    if (n == 3) {
        const conn_id id = conn_id(parse_number(a[2], "connection id"));
        std::optional<conn_info> info;
        if (datapath* l = lane_of(id)) {
            l->call([&] { info = l->w().ep().inspect(id); });
        }
        if (!info) {
            throw std::invalid_argument("no connection " + a[2] + " (see 'show conn')");
        }
        if (json) {
            std::printf("%s\n", dpdk::to_json(*info, false).dump().c_str());
            return;
        }
        std::printf("conn %u -> %s (peer conn %u) %s%s, %u paths, mtu %u, cwnd %.1f, inflight %u, "
                    "msgs outstanding %u, tx completed %llu, rx committed %llu, state %zu bytes, "
                    "rate hint received %u Mb/s\n",
                    info->id, dpdk::format_ipv4(info->peer_addr).c_str(), info->peer_conn,
                    std::string(to_string(info->state)).c_str(), info->incoming ? " (incoming)" : "",
                    info->paths, info->mtu, info->conn_cwnd, info->inflight, info->outstanding_msgs,
                    (unsigned long long)info->tx_msgs_completed,
                    (unsigned long long)info->rx_msgs_committed, info->state_bytes, info->rate_hint_mbps);
        return;
    }
    if (json) {
        std::printf("%s\n", conns_json().c_str());
        return;
    }
    std::vector<conn_info> all; // every lane's, in lane order
    for (auto& l : lanes_) {
        l->call([&] {
            for (conn_id c : l->w().ep().connections()) {
                if (auto i = l->w().ep().inspect(c)) {
                    all.push_back(*i);
                }
            }
        });
    }
    if (all.empty()) {
        std::printf("no connections\n");
        return;
    }
    // hint_tx: the share we (as receiver) tell the peer now; hint_rx: the last hint the
    // peer (as receiver) sent us. Mb/s, 0 none. hint_rx stays last (test rate_hints).
    std::printf("%-8s %-16s %-12s %-9s %-6s %-10s %-12s %-8s %-8s\n", "id", "peer", "state",
                "incoming", "paths", "inflight", "tx_msgs", "hint_tx", "hint_rx");
    for (const auto& i : all) {
        std::printf("%-8u %-16s %-12s %-9s %-6u %-10u %-12llu %-8u %-8u\n", i.id,
                    dpdk::format_ipv4(i.peer_addr).c_str(), std::string(to_string(i.state)).c_str(),
                    i.incoming ? "yes" : "no", i.paths, i.inflight,
                    (unsigned long long)i.tx_msgs_completed, i.rate_hint_sent_mbps, i.rate_hint_mbps);
    }
}

void application::show_path(const args& a)
{
    if (a.size() != 3) {
        usage_error("show path <conn>", "expected one connection id");
    }
    const conn_id id = conn_id(parse_number(a[2], "connection id"));
    std::optional<conn_info> info;
    if (datapath* l = lane_of(id)) {
        l->call([&] { info = l->w().ep().inspect(id); });
    }
    if (!info) {
        throw std::invalid_argument("no connection " + a[2] + " (see 'show conn')");
    }
    std::printf("%-5s %-5s %-6s %-8s %-8s %-8s %-10s %-10s %-8s %-10s %-8s\n", "path", "plane",
                "sport", "state", "cwnd", "inflight", "srtt_us", "rto_us", "timeouts", "tx_pkts",
                "ecn_frac");
    for (const auto& p : info->path) {
        const double ecn = p.acked_rx == 0 ? 0.0 : double(p.acked_ce) / double(p.acked_rx);
        std::printf("%-5u %-5u %-6u %-8s %-8.1f %-8u %-10.1f %-10.1f %-8u %-10llu %-8.3f\n", p.index,
                    p.plane, p.udp_sport, dpdk::path_state_name(p.state).c_str(),
                    p.cwnd, p.inflight, double(p.srtt_ns) / 1e3, double(p.rto_ns) / 1e3,
                    p.timeouts, (unsigned long long)p.tx_packets, ecn);
    }
}

void application::show_planes(const args& a)
{
    if (a.size() != 2) {
        usage_error("show planes", "no arguments expected");
    }
    // Paths summed over the lanes; a plane is detected down where any lane detected it.
    std::vector<plane_info> eps;
    for (auto& l : lanes_) {
        l->call([&] {
            for (const plane_info& pi : l->w().ep().planes()) {
                auto same = std::find_if(eps.begin(), eps.end(), [&](const plane_info& e) { return e.plane == pi.plane; });
                if (same == eps.end()) {
                    eps.push_back(pi);
                } else {
                    same->paths += pi.paths;
                    same->detected_up = same->detected_up && pi.detected_up;
                }
            }
        });
    }
    const dpdk::worker_counters w = sum_counters();
    std::printf("%-6s %-5s %-14s %-18s %-16s %-6s %-6s %-6s %-9s %-6s %-12s %-12s\n", "plane", "port",
                "name", "mac", "address", "link", "admin", "used", "detected", "paths", "tx_frames",
                "rx_frames");
    const auto& caps = dp_->ports();
    for (size_t p = 0; p < cfg_.ports.size(); ++p) {
        const bool link = !link_down_[p].load();
        const bool adm = !admin_down_[p].load();
        const plane_info* ep = nullptr;
        for (const auto& e : eps) {
            ep = e.plane == p ? &e : ep;
        }
        std::printf("%-6zu %-5u %-14s %-18s %-16s %-6s %-6s %-6s %-9s %-6u %-12llu %-12llu\n", p, cfg_.ports[p],
                    caps[p].name.c_str(), dpdk::format_mac(caps[p].mac).c_str(),
                    dpdk::format_ipv4(dpdk::plane_ip(cfg_.address, uint8_t(p))).c_str(),
                    link ? "up" : "down", adm ? "up" : "down",
                    admin_.up[p].load() ? "yes" : "no",
                    ep == nullptr ? "-" : ep->detected_up ? "up" : "down", ep == nullptr ? 0u : ep->paths,
                    (unsigned long long)w.plane_tx_frames[p], (unsigned long long)w.plane_rx_frames[p]);
    }
}

void application::show_stats(const args& a)
{
    if (a.size() != 2) {
        usage_error("show stats", "no arguments expected");
    }
    std::printf("stats: %s\n", stats_json().c_str());
}

void application::show_xstats(const args& a)
{
    if (a.size() != 2) {
        usage_error("show xstats", "no arguments expected");
    }
    const dpdk::worker_counters w = sum_counters();
    const counters t = sum_transport();
    const auto line = [](const std::string& name, uint64_t v, std::string_view) {
        std::printf("  %-32s %llu\n", (name + ":").c_str(), static_cast<unsigned long long>(v));
    };
    std::printf("  ###### datapath (%s) counters\n", lcores_text().c_str());
    for_each_counter(w, dpdk::worker_counter_fields(), line);
    std::printf("  ###### transport counters\n");
    for_each_counter(t, counter_fields(), line);
}

} // namespace metaroce::app
