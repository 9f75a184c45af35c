// metaroce-perf: perftest for MetaRoCE over DPDK ports.
//   server: metaroce-perf [EAL options] -- write_bw [options]
//   client: metaroce-perf [EAL options] -- write_bw [options] 10.0.0.1
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <atomic>

#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "dpdk/capture.hpp"
#include "dpdk/diagnose.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/node.hpp"
#include "dpdk/stats_json.hpp"
#include "options.hpp"
#include "multi_run.hpp"
#include "perf_io.hpp"
#include "raw.hpp"
#include "session.hpp"
#include "transport_opts.hpp"
#include "udp_backend.hpp"

namespace metaroce::perf {
std::atomic<bool> g_quit{false};
}

namespace {
void on_signal(int)
{
    metaroce::perf::g_quit.store(true);
}
} // namespace

int main(int argc, char** argv)
{
    using namespace metaroce;
    int used = 0;
    try {
        used = dpdk::eal_init(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce-perf: %s\n", e.what());
        return 1;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    int rc = 1;
    try {
        // getopt wants argv[0] first: reuse the program name.
        argv[used - 1] = argv[0];
        const auto opts = perf::parse_options(argc - used + 1, argv + used - 1);
        if (!opts) {
            dpdk::eal_cleanup();
            return 0;
        }
        const perf::options& o = *opts;
        if (o.backend == perf::backend_kind::udp) {
            rc = perf::run_udp(o, perf::run_info{});
            dpdk::eal_cleanup();
            return rc;
        }
        if (o.pdump) {
            if (const std::string why = dpdk::enable_capture(); !why.empty() && dpdk::eal_has_hugepages()) {
                std::fprintf(stderr, "metaroce-perf: packet capture off: %s\n", why.c_str());
            }
        }
        if (dpdk::port_count() < o.planes) {
            const std::string why = dpdk::explain_missing_devices();
            throw std::invalid_argument(
                std::to_string(o.planes) + " plane(s) need as many ports, found " +
                std::to_string(dpdk::port_count()) + " (" +
                (why.empty() ? "add --vdev=net_memif0,role=server,socket=/tmp/metaroce.sock ..." : why) +
                ")");
        }
        dpdk::node_params np;
        np.node_addr = o.local_addr;
        for (uint16_t p = 0; p < o.planes; ++p) {
            np.ports.push_back(p);
        }
        if (const std::string extra = dpdk::unused_ports(np.ports); !extra.empty()) {
            std::fprintf(stderr, "metaroce-perf: warning: port(s) %s unused: --planes %u uses ports 0..%u "
                         "(raise --planes or drop the extra --vdev/-a)\n",
                         extra.c_str(), unsigned(o.planes), unsigned(o.planes - 1));
        }
        // A memif client waits for its server as long as the client waits for an answer.
        np.peer_wait_ms = o.timeout_s * 1000;
        np.transport = perf::transport_from(o, np.transport);
        np.accept_incoming = !o.client;
        np.udp_csum_software = o.udp_csum_sw;
        np.inbound_capacity_mbps = o.inbound_capacity_mbps;
        np.tx_copy = o.tx_copy;
        np.max_connections = std::max<uint32_t>(64, o.qps * 2);
        for (const auto& g : o.gateways) {
            np.gateways.emplace_back(g);
        }
        // One worker per lcore (-l), worker 0 on the main lcore (multi_run.hpp).
        np.workers = o.raw ? 1 : uint16_t(rte_lcore_count());
        dpdk::node n(np);
        perf::run_info info;
        for (const auto& c : n.ports()) {
            info.device += (info.device.empty() ? "" : ",") + c.name;
        }
        info.planes = o.planes;
        info.paths = o.paths;
        info.link_up = [&n] {
            // Only memif's link follows the peer process (net_af_packet's stays up).
            for (const auto& c : n.ports()) {
                if (c.driver == "net_memif" && dpdk::port_link_up(c.port_id)) {
                    return true;
                }
            }
            return false;
        };
        // Counters and the plane log are printed on failure too: that is when they matter.
        std::exception_ptr failure;
        try {
            if (o.raw) {
                info.transport = "raw UDP";
                rc = perf::run_raw(n, o, info);
            } else if (n.workers() > 1) {
                rc = perf::run_workers(n, o, info);
            } else {
                perf::dpdk_io io(n.w());
                io.yield_when_idle(o.yield_idle);
                perf::session s(io, o, info);
                rc = s.run();
            }
        } catch (...) {
            failure = std::current_exception();
        }
        if (o.plane_log) {
            // One line for scripts: what each plane carried and when planes changed state.
            const dpdk::tsc_clock clk;
            nlohmann::json j;
            j["plane_tx_frames"] = n.w().counters().plane_tx_frames;
            j["plane_rx_frames"] = n.w().counters().plane_rx_frames;
            j["events"] = dpdk::to_json(n.w().plane_events(), o.planes, clk.wall_offset_ns());
            std::printf("plane_log %s\n", j.dump().c_str());
            std::fflush(stdout);
        }
        if (o.show_counters) {
            nlohmann::json j;
            j["worker"] = dpdk::to_json(n.w().counters());
            j["transport"] = dpdk::to_json(n.w().ep().stats());
            j["rate_hints"] = {{"inbound_capacity_mbps", n.capacity().mbps}, {"source", n.capacity().source}};
            if (dpdk::k_stage_timing) { // built with -Dstage_timing=true
                j["stages"] = dpdk::to_json(n.w().stages());
            }
            for (const auto& c : n.ports()) {
                rte_eth_stats ps{};
                if (rte_eth_stats_get(c.port_id, &ps) == 0) {
                    nlohmann::json q;
                    for (size_t i = 0; i < n.workers() && i < RTE_ETHDEV_QUEUE_STAT_CNTRS; ++i) {
                        q.push_back({{"ipackets", ps.q_ipackets[i]}, {"opackets", ps.q_opackets[i]}});
                    }
                    j["ports"].push_back({{"port", c.port_id}, {"ipackets", ps.ipackets}, {"opackets", ps.opackets},
                                          {"imissed", ps.imissed}, {"ierrors", ps.ierrors},
                                          {"oerrors", ps.oerrors}, {"rx_nombuf", ps.rx_nombuf}, {"queues", q}});
                }
            }
            if (n.workers() > 1) {
                // Per worker, with the hand-off counters (frames that came in on another
                // worker's queue).
                for (size_t k = 0; k < n.workers(); ++k) {
                    j["workers"].push_back({{"worker", dpdk::to_json(n.w(k).counters())},
                                            {"transport", dpdk::to_json(n.w(k).ep().stats())}});
                }
            }
            std::fprintf(stderr, "%s\n", j.dump(1).c_str());
        }
        if (failure) {
            std::rethrow_exception(failure);
        }
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "metaroce-perf: %s\n", e.what());
        rc = 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce-perf: error: %s\n", e.what());
        rc = 1;
    }
    dpdk::eal_cleanup();
    return rc;
}
