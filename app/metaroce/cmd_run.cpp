// The prompt's handlers that run the node: planes, the engine, connections, counters.
#include <rte_ethdev.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "app.hpp"
#include "commands.hpp"
#include "dpdk/port.hpp"

namespace metaroce::app {

void application::set_plane(const args& a)
{
    if (a.size() != 4 || (a[3] != "down" && a[3] != "up")) {
        usage_error("set plane <n> down|up", "expected a plane and down or up");
    }
    const uint64_t p = parse_number(a[2], "plane");
    if (p >= cfg_.ports.size()) {
        throw std::invalid_argument("no plane " + a[2] + " (planes 0.." + std::to_string(cfg_.ports.size() - 1) +
                                    ")");
    }
    admin_down_[p].store(a[3] == "down");
    // The control thread publishes it; wait (bounded) so scripts see it done.
    const bool want = a[3] == "up" && !link_down_[p].load();
    for (int i = 0; i < 100 && admin_.up[p].load() != want; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::printf("plane %llu is now administratively %s\n", (unsigned long long)p, a[3].c_str());
}

void application::set_fwd(const args& a)
{
    const auto t = a.size() == 3 ? engines::parse_test(a[2]) : std::nullopt;
    if (!t) {
        usage_error("set fwd write_bw|send_bw|read_bw|write_lat|send_lat",
                    a.size() == 3 ? "unknown engine '" + a[2] + "'" : "expected one engine");
    }
    if (started_) {
        throw std::invalid_argument("stop first: the engine is running");
    }
    for (auto& l : lanes_) {
        l->call([&] { l->engines().set_test(*t); });
    }
    std::printf("Set %s packet forwarding mode\n", engines::test_name(*t));
}

void application::cmd_connect(const args& a)
{
    uint32_t addr = 0;
    const bool nowait = a.size() == 3 && a[2] == "nowait";
    if ((a.size() != 2 && !nowait) || !dpdk::parse_ipv4(a[1], addr)) {
        usage_error("connect <addr>", a.size() < 2 || a.size() > 3 ? "expected one address"
                                      : a.size() == 3 && !nowait   ? "unknown option '" + a[2] + "'"
                                                                   : "'" + a[1] + "' is not an IPv4 address");
    }
    for (size_t k = 0; k < lanes_.size(); ++k) {
        if (addr == dpdk::worker_addr(cfg_.address, uint16_t(k))) {
            throw std::invalid_argument("that is this node's own address");
        }
    }
    // The lane (worker) with the fewest connections takes it, from its own address.
    datapath& d = least_loaded();
    conn_id c = k_no_conn;
    d.call([&] { c = d.w().ep().connect(addr, d.now_ns()); });
    if (c == k_no_conn) {
        std::printf("connect: the connection table is full\n");
        return;
    }
    if (nowait) {
        std::printf("connection %u to %s: connecting\n", c, a[1].c_str());
        return;
    }
    // Wait for the handshake so scripts can go on with 'start': the endpoint gives up
    // after transport.connect_retries; Ctrl-C gives up sooner.
    using clock = std::chrono::steady_clock;
    const auto began = clock::now();
    const auto secs = [&] { return std::chrono::duration<double>(clock::now() - began).count(); };
    std::optional<conn_info> info;
    size_t ready = 0;
    bool hinted = false;
    for (;;) {
        d.call([&] {
            info = d.w().ep().inspect(c);
            ready = d.engines().connections();
        });
        const bool connecting = info && info->state == conn_state::connecting;
        // Established: give the engines (bounded) a moment to take it.
        if (!connecting && (!info || info->state != conn_state::established || ready != 0 || secs() > 3)) {
            break;
        }
        if (interrupted()) {
            d.call([&] { d.w().ep().close(c, d.now_ns()); });
            std::printf("connection %u to %s: interrupted after %.1f s (Ctrl-C); closed\n", c, a[1].c_str(),
                        secs());
            return;
        }
        if (connecting && !hinted && secs() > 1) {
            std::printf("connection %u to %s: no answer yet, still trying (Ctrl-C gives up)\n", c, a[1].c_str());
            std::fflush(stdout);
            hinted = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (info && info->state != conn_state::error) {
        std::printf("connection %u to %s: %s", c, a[1].c_str(), std::string(to_string(info->state)).c_str());
        if (lanes_.size() > 1) {
            std::printf(" (worker %zu, lcore %u)", d.index(), d.lcore());
        }
        std::printf("\n");
        return;
    }
    // Failed (then freed after a linger): the endpoint fails a connection in setup only
    // when its retries run out, so the peer never answered.
    std::printf("connection %u to %s: failed: no answer after %u attempts in %.1f s; is a metaroce node "
                "running at %s, on the same plane network?\n",
                c, a[1].c_str(), cfg_.transport.connect_retries + 1, secs(), a[1].c_str());
}

void application::cmd_close(const args& a)
{
    if (a.size() != 2) {
        usage_error("close <conn>", "expected one connection id");
    }
    const conn_id c = conn_id(parse_number(a[1], "connection id"));
    datapath* d = lane_of(c);
    const bool known = d != nullptr;
    if (d != nullptr) {
        d->call([&] { d->w().ep().close(c, d->now_ns()); });
    }
    std::printf("close: conn %u%s\n", c, known ? "" : " (no such connection)");
}

void application::cmd_start(const args& a)
{
    if (a.size() != 1) {
        usage_error("start", "no arguments expected");
    }
    if (started_) {
        std::printf("Packet forwarding already started\n");
        return;
    }
    size_t ready = 0;
    engines::test_kind t{};
    for (auto& l : lanes_) {
        l->call([&] {
            ready += l->engines().start(l->now_ns());
            t = l->engines().test();
        });
    }
    started_ = true;
    std::printf("%s forwarding - connections ready=%zu - %s\n", engines::test_name(t), ready,
                lcores_text().c_str());
}

namespace {

void print_port_block(uint16_t p)
{
    rte_eth_stats s{};
    rte_eth_stats_get(p, &s);
    std::printf("  ---------------------- Forward statistics for port %-2u ----------------------\n", p);
    std::printf("  RX-packets: %-14llu RX-dropped: %-14llu RX-total: %llu\n", (unsigned long long)s.ipackets,
                (unsigned long long)s.imissed, (unsigned long long)(s.ipackets + s.imissed));
    std::printf("  TX-packets: %-14llu TX-dropped: %-14llu TX-total: %llu\n", (unsigned long long)s.opackets,
                (unsigned long long)s.oerrors, (unsigned long long)(s.opackets + s.oerrors));
    std::printf("  ----------------------------------------------------------------------------\n\n");
}

// Two lanes' runs as one: counts add, the span covers both, latencies pool.
run_stats merge_runs(run_stats a, const run_stats& b)
{
    if (b.start_ns == 0 && b.messages == 0) {
        return a; // that lane ran nothing
    }
    if (a.start_ns == 0 && a.messages == 0) {
        return b;
    }
    a.messages += b.messages;
    a.bytes += b.bytes;
    a.errors += b.errors;
    a.start_ns = std::min(a.start_ns, b.start_ns);
    a.stop_ns = std::max(a.stop_ns, b.stop_ns);
    if (b.latency.count != 0) {
        a.latency.min_us = a.latency.count == 0 ? b.latency.min_us : std::min(a.latency.min_us, b.latency.min_us);
        a.latency.max_us = std::max(a.latency.max_us, b.latency.max_us);
        a.latency.sum_us += b.latency.sum_us;
        a.latency.count += b.latency.count;
    }
    return a;
}

void print_check(const run_check& c)
{
    if (c.conns == 0) {
        return;
    }
    if (c.bad_bytes != 0) {
        std::printf("  Data verification: FAILED (%llu bytes differ)\n", (unsigned long long)c.bad_bytes);
    } else if (c.answered < c.conns) {
        std::printf("  Data verification: not checked on %u of %u connection(s) (no verdict from the peer)\n",
                    c.conns - c.answered, c.conns);
    } else {
        std::printf("  Data verification: %s (%u connection(s))\n", c.checked == c.conns ? "ok" : "not checked",
                    c.conns);
    }
}

} // namespace

void application::cmd_stop(const args& a)
{
    if (a.size() != 1) {
        usage_error("stop", "no arguments expected");
    }
    if (!started_) {
        std::printf("Packet forwarding not started\n");
        return;
    }
    run_stats r;
    for (size_t k = 0; k < lanes_.size(); ++k) {
        run_stats one;
        datapath& l = *lanes_[k];
        l.call([&] { one = l.engines().stop(l.now_ns()); });
        r = k == 0 ? one : merge_runs(r, one);
    }
    const dpdk::worker_counters w = sum_counters();
    const counters t = sum_transport();
    started_ = false;
    std::printf("Telling cores to stop...\nWaiting for lcores to finish...\n\n");
    // The runs end with their peers (the last requests drain, the peers check what
    // landed): wait for their verdicts, bounded.
    run_check chk;
    bool ending = true;
    // Several lanes share the CPUs with the peer's: their drains may take longer.
    const uint64_t bound_ns = lanes_.size() > 1 ? 5'000'000'000ull : 2'000'000'000ull;
    for (const uint64_t until = dp_->now_ns() + bound_ns; ending && dp_->now_ns() < until && !interrupted();) {
        ending = false;
        chk = {};
        for (auto& l : lanes_) {
            l->call([&] {
                ending |= l->engines().ending();
                const run_check c = l->engines().check();
                chk.conns += c.conns;
                chk.answered += c.answered;
                chk.checked += c.checked;
                chk.bad_bytes += c.bad_bytes;
            });
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (uint16_t p : cfg_.ports) {
        if (!cfg_.udp) { // no ethdev counters on the udp backend
            print_port_block(p);
        }
    }
    const double secs = double(r.stop_ns - r.start_ns) / 1e9;
    std::printf("  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++\n");
    std::printf("  RX-packets: %-14llu RX-dropped: %-14llu RX-total: %llu\n", (unsigned long long)w.rx_frames,
                (unsigned long long)w.rx_drops_total(), (unsigned long long)(w.rx_frames));
    std::printf("  TX-packets: %-14llu TX-dropped: %-14llu TX-total: %llu\n", (unsigned long long)w.tx_frames,
                (unsigned long long)(w.tx_plane_down + w.tx_bad_frame),
                (unsigned long long)(w.tx_frames + w.tx_plane_down + w.tx_bad_frame));
    std::printf("  Engine %s: %llu messages, %llu bytes in %.3f s = %.3f Gb/s, %llu errors\n",
                engines::test_name(r.test), (unsigned long long)r.messages, (unsigned long long)r.bytes, secs,
                secs > 0 ? double(r.bytes) * 8 / secs / 1e9 : 0.0, (unsigned long long)r.errors);
    if (r.latency.count != 0) {
        std::printf("  Latency (half RTT): min %.2f us, avg %.2f us, max %.2f us over %llu\n", r.latency.min_us,
                    r.latency.sum_us / double(r.latency.count), r.latency.max_us,
                    (unsigned long long)r.latency.count);
    }
    print_check(chk);
    std::printf("  Transport: retransmits %llu, timeouts %llu, reroutes %llu, rx CE %llu\n",
                (unsigned long long)t.retransmits, (unsigned long long)t.timeouts, (unsigned long long)t.reroutes,
                (unsigned long long)t.rx_ce);
    std::printf("  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++\n\nDone.\n");
}

void application::show_fwd_stats(const args& a)
{
    if (a.size() != 3) {
        usage_error("show fwd stats", "no arguments expected");
    }
    const dpdk::worker_counters w = sum_counters();
    engines::test_kind k{};
    dp_->call([&] { k = dp_->engines().test(); });
    for (uint16_t p : cfg_.ports) {
        if (!cfg_.udp) { // no ethdev counters on the udp backend
            print_port_block(p);
        }
    }
    std::printf("  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++\n");
    std::printf("  RX-packets: %-14llu RX-dropped: %-14llu RX-total: %llu\n", (unsigned long long)w.rx_frames,
                (unsigned long long)w.rx_drops_total(), (unsigned long long)(w.rx_frames));
    std::printf("  TX-packets: %-14llu TX-dropped: %-14llu TX-total: %llu\n", (unsigned long long)w.tx_frames,
                (unsigned long long)(w.tx_plane_down + w.tx_bad_frame),
                (unsigned long long)(w.tx_frames + w.tx_plane_down + w.tx_bad_frame));
    std::printf("  Engine %s: %s\n", engines::test_name(k), started_ ? "running" : "stopped");
    std::printf("  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++\n");
    if (lanes_.size() > 1) {
        print_workers();
    }
}

void application::clear_stats(const args& a)
{
    if (a.size() != 2) {
        usage_error("clear stats", "expected 'stats'");
    }
    for (uint16_t p : cfg_.ports) {
        if (!cfg_.udp) {
            rte_eth_stats_reset(p);
        }
    }
    for (auto& l : lanes_) {
        l->call([&] {
            l->w().clear_counters();
            l->w().ep().clear_stats();
        });
    }
    std::printf("Statistics cleared\n");
}

void application::cmd_quit(const args& a)
{
    if (a.size() != 1) {
        usage_error("quit", "no arguments expected");
    }
    if (started_) {
        cmd_stop({"stop"});
    }
    quit_ = true;
}

} // namespace metaroce::app
