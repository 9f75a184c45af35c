#include "udp_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>


#include <nlohmann/json.hpp>

#include "dpdk/eal.hpp"
#include "dpdk/port.hpp"
#include "dpdk/stats_json.hpp"
#include "perf_io.hpp"
#include "session.hpp"
#include "transport_opts.hpp"
#include "udp/idle_poller.hpp"
#include "udp/node.hpp"

namespace metaroce::perf {

namespace {

// The session's packet I/O on a UDP node: polled by idle_poller (busy while there is
// work, then asleep on the sockets for at most 1 ms, so -D and --timeout stay on time).
class udp_io final : public perf_io {
public:
    explicit udp_io(udp::node& n) : n_(n), poller_(n) {}
    endpoint& ep() noexcept override { return n_.ep(); }
    void poll(uint64_t now_ns) override { poller_.poll(now_ns); }
    void flush() noexcept override
    {
        // The node sends as it polls; a few passes hand the kernel what is queued.
        for (int i = 0; i < 16 && n_.poll(clk_.now_ns()); ++i) {
        }
    }
    uint32_t node() const noexcept override { return n_.params().plane_addrs[0]; }
    uint64_t rx_frames() const noexcept override { return n_.counters().rx_datagrams; }

private:
    udp::node& n_;
    udp::idle_poller poller_; // the endpoint's timers run on the session's clock
    dpdk::tsc_clock clk_; // the session's clock: the endpoint's timers run on it
};

void refuse_dpdk_only(const options& o)
{
    const char* what = o.raw ? "--raw" : !o.gateways.empty() ? "--gateway" : o.plane_log ? "--plane-log"
                     : o.udp_csum_sw ? "--udp-csum" : nullptr;
    if (what != nullptr) {
        throw std::invalid_argument(std::string(what) + " needs DPDK ports; drop it or use --backend dpdk");
    }
}

nlohmann::json to_json(const udp::udp_counters& c)
{
    return {{"rx_datagrams", c.rx_datagrams}, {"rx_bytes", c.rx_bytes},
            {"rx_kernel_drops", c.rx_kernel_drops}, {"rx_ce", c.rx_ce},
            {"rx_malformed", c.rx_malformed}, {"rx_gro_runs", c.rx_gro_runs},
            {"tx_datagrams", c.tx_datagrams}, {"tx_bytes", c.tx_bytes},
            {"tx_gso_sends", c.tx_gso_sends}, {"tx_would_block", c.tx_would_block},
            {"tx_errors", c.tx_errors}, {"sport_sockets", c.sport_sockets}};
}

} // namespace

int run_udp(const options& o, run_info info)
{
    refuse_dpdk_only(o);
    udp::node_params np;
    for (uint32_t p = 0; p < o.planes; ++p) {
        np.plane_addrs.push_back(o.local_addr + (p << 8));
    }
    transport_config base = udp::kernel_udp_transport();
    // 128 x 64 KiB in flight drain in ~7 ms at 10 Gb/s, longer while a process of the
    // pair is descheduled: the 5 ms floor fired ~300 spurious RTOs a second and failed
    // 1 run in 3 on 2 shared cores (write_bw -D 3); 20 ms gave none and 4x the rate.
    base.min_rto_ns = std::max<uint64_t>(base.min_rto_ns, 20'000'000);
    base.max_rto_ns = std::max(base.max_rto_ns, base.min_rto_ns << base.max_backoff_shift); // room to back off
    np.transport = transport_from(o, base);
    np.accept_incoming = !o.client;
    np.max_connections = std::max<uint32_t>(64, o.qps * 2);
    udp::node n(np); // throws with the reason (address not local, in use, ...)
    info.device = "udp:" + dpdk::format_ipv4(o.local_addr);
    info.planes = o.planes;
    info.paths = o.paths;
    int rc = 1;
    std::exception_ptr failure;
    try {
        udp_io io(n);
        session s(io, o, info);
        rc = s.run();
    } catch (...) {
        failure = std::current_exception();
    }
    if (o.show_counters) { // on failure too: that is when they matter
        nlohmann::json j;
        j["udp"] = to_json(n.counters());
        j["transport"] = dpdk::to_json(n.ep().stats());
        std::fprintf(stderr, "%s\n", j.dump(1).c_str());
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
    return rc;
}

} // namespace metaroce::perf
