// metaroce: the testpmd-style application.
//   metaroce [EAL options] -- [--config FILE] [-i] [-a] [--json]
#include <getopt.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "app.hpp"
#include "prompt.hpp"
#include "udp_dp_io.hpp"
#include "dpdk/capture.hpp"
#include "dpdk/diagnose.hpp"
#include "dpdk/eal.hpp"

namespace {

std::atomic<bool> g_stop{false};

void usage(const char* prog)
{
    std::printf("Usage: %s [EAL options] -- [--config FILE] [-i] [-a] [--fwd ENGINE]\n"
                "                 [--backend dpdk|udp]\n"
                "  --config FILE  JSON configuration (config/*.json)\n"
                "  -i             interactive prompt\n"
                "  -a             start forwarding right away\n"
                "  --fwd ENGINE   write_bw|send_bw|read_bw|write_lat|send_lat\n"
                "  --connect ADDR open a connection at start\n"
                "  --backend B    dpdk (ports, the default) or udp (kernel sockets on the planes'\n"
                "                 addresses; run the EAL with --no-huge and no ports)\n"
                "  --no-pdump     do not serve dpdk-dumpcap/dpdk-pdump capture requests\n"
                "  --yield-idle   an idle datapath worker yields its CPU (more busy lcores than cores)\n",
                prog);
}

} // namespace

int main(int argc, char** argv)
{
    using namespace metaroce;
    int used = 0;
    try {
        used = dpdk::eal_init(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce: %s\n", e.what());
        return 1;
    }
    // Ctrl-C ends the non-interactive run, and at the prompt the command that waits.
    std::signal(SIGINT, [](int) {
        g_stop.store(true);
        app::application::interrupt();
    });
    std::signal(SIGTERM, [](int) { g_stop.store(true); });
    int rc = 0;
    try {
        argc -= used - 1;
        argv += used - 1;
        std::string config_path;
        std::string fwd;
        std::string connect_to;
        std::string backend;
        bool interactive = false;
        bool autostart = false;
        bool pdump = true;
        bool yield_idle = false;
        static const option longs[] = {{"config", required_argument, nullptr, 'c'},
                                       {"no-pdump", no_argument, nullptr, 'P'},
                                       {"fwd", required_argument, nullptr, 'f'},
                                       {"connect", required_argument, nullptr, 'C'},
                                       {"backend", required_argument, nullptr, 'B'},
                                       {"yield-idle", no_argument, nullptr, 'Y'},
                                       {"help", no_argument, nullptr, 'h'},
                                       {nullptr, 0, nullptr, 0}};
        optind = 0;
        opterr = 0;
        for (int c; (c = getopt_long(argc, argv, ":iah", longs, nullptr)) != -1;) {
            switch (c) {
            case 'c': config_path = optarg; break;
            case 'f': fwd = optarg; break;
            case 'C': connect_to = optarg; break;
            case 'B': backend = optarg; break;
            case 'i': interactive = true; break;
            case 'P': pdump = false; break;
            case 'Y': yield_idle = true; break;
            case 'a': autostart = true; break;
            case 'h': usage(argv[0]); dpdk::eal_cleanup(); return 0;
            case ':': throw std::invalid_argument(std::string("option ") + argv[optind - 1] + " needs a value");
            default: throw std::invalid_argument(std::string("unknown option '") + argv[optind - 1] + "'");
            }
        }
        if (optind < argc) {
            throw std::invalid_argument(std::string("unexpected argument '") + argv[optind] + "'");
        }
        app::app_config cfg;
        if (!config_path.empty()) {
            cfg = app::load_config(config_path);
        }
        cfg.yield_idle = yield_idle;
        const std::string origin = config_path.empty() ? "the default configuration" : config_path;
        if (!backend.empty() && backend != "dpdk" && backend != "udp") {
            throw std::invalid_argument("--backend " + backend + ": expected dpdk or udp");
        }
        if (!backend.empty()) {
            cfg.udp = backend == "udp";
        }
        if (cfg.udp) {
            app::check_udp(cfg, origin);
            cfg.transport = app::udp_transport(cfg.transport);
            pdump = false;
        } else {
            app::check_ports(cfg, origin);
        }
        if (const std::string extra = cfg.udp ? "" : dpdk::unused_ports(cfg.ports); !extra.empty()) {
            std::string used;
            for (uint16_t p : cfg.ports) {
                used += (used.empty() ? "" : ", ") + std::to_string(p);
            }
            std::fprintf(stderr, "metaroce: warning: port(s) %s unused: %s uses \"ports\": [%s]; add them "
                         "there (one per plane) or drop their --vdev/-a\n",
                         extra.c_str(), origin.c_str(), used.c_str());
        }
        if (pdump) {
            if (const std::string why = dpdk::enable_capture(); !why.empty()) {
                std::printf("metaroce: packet capture off: %s\n", why.c_str());
            }
        }
        app::application a(cfg);
        std::printf("metaroce: node %s, %zu plane(s), datapath on %s%s%s\n",
                    dpdk::format_ipv4(cfg.address).c_str(), cfg.ports.size(), a.lcores_text().c_str(),
                    a.lanes() > 1 ? (" (" + std::to_string(a.lanes()) + " workers)").c_str() : "",
                    cfg.udp ? ", udp backend" : "");
        std::fflush(stdout);
        if (!fwd.empty()) {
            a.execute("set fwd " + fwd);
        }
        if (!connect_to.empty()) {
            a.execute("connect " + connect_to);
        }
        if (autostart) {
            a.execute("start");
        }
        if (interactive) {
            app::run_prompt(a);
            if (!a.quit_requested()) {
                a.execute("quit");
            }
        } else {
            std::printf("Press Ctrl-C to quit.\n");
            std::fflush(stdout);
            while (!g_stop.load()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            a.execute("quit");
        }
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "metaroce: %s\n", e.what());
        rc = 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce: error: %s\n", e.what());
        rc = 1;
    }
    dpdk::eal_cleanup();
    return rc;
}
