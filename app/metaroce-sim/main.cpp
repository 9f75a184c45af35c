// metaroce-sim SCENARIO.json [--seed N] [--timeline] [--breakdown] [--progress SEC] [--quiet]: runs
// one scenario on the fabric model and prints the result as JSON on stdout, without the
// per-bin timeline unless asked. Exit 2 on a bad scenario or usage.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "compact_json.hpp"
#include "heartbeat.hpp"
#include "sim/scenario_json.hpp"
#include "sim/simulator.hpp"

namespace {

constexpr int k_exit_failed = 1;
constexpr int k_exit_usage = 2;

struct options {
    std::string path;
    std::optional<uint64_t> seed;
    bool quiet = false;
    bool timeline = false;
    bool breakdown = false;
    double progress_s = 5;
};

int usage(const std::string& why)
{
    std::cerr << "metaroce-sim: " << why << "\n"
              << "usage: metaroce-sim SCENARIO.json [--seed N] [--timeline] [--breakdown] [--progress SEC] [--quiet]\n"
              << "  SCENARIO.json  the scenario (doc/model.md); - reads stdin\n"
              << "  --seed N       overrides the scenario's seed\n"
              << "  --timeline     adds the per-bin timeline (goodput, per plane, last-hop queue)\n"
              << "  --breakdown    adds when each connection finished and the bytes of every\n"
              << "                 leaf-spine link and host port\n"
              << "  --progress SEC a progress line on stderr every SEC seconds (default 5, 0: none)\n"
              << "  --quiet        nothing on stderr but errors\n";
    return k_exit_usage;
}

// Returns an error message, empty on success.
std::string parse_args(int argc, char** argv, options& o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--quiet" || a == "-q") {
            o.quiet = true;
        } else if (a == "--timeline") {
            o.timeline = true;
        } else if (a == "--breakdown") {
            o.breakdown = true;
        } else if (a == "--progress") {
            if (i + 1 >= argc) {
                return "--progress needs a value";
            }
            const std::string_view v = argv[++i];
            double sec = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), sec);
            if (ec != std::errc{} || end != v.data() + v.size() || sec < 0) {
                return "--progress must be a number of seconds >= 0, got '" + std::string(v) + "'";
            }
            o.progress_s = sec;
        } else if (a == "--seed") {
            if (i + 1 >= argc) {
                return "--seed needs a value";
            }
            const std::string_view v = argv[++i];
            uint64_t n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size()) {
                return "--seed must be a non-negative integer, got '" + std::string(v) + "'";
            }
            o.seed = n;
        } else if (a == "-h" || a == "--help") {
            return "help";
        } else if (a.size() > 1 && a[0] == '-') {
            return "unknown option '" + std::string(a) + "'";
        } else if (o.path.empty()) {
            o.path = a;
        } else {
            return "more than one scenario given";
        }
    }
    return o.path.empty() ? "no scenario given" : "";
}

bool read_text(const std::string& path, std::string& out)
{
    std::ostringstream ss;
    if (path == "-") {
        ss << std::cin.rdbuf();
    } else {
        std::ifstream f(path);
        if (!f) {
            return false;
        }
        ss << f.rdbuf();
    }
    out = ss.str();
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    if (const auto err = parse_args(argc, argv, o); !err.empty()) {
        return usage(err);
    }
    std::string text;
    if (!read_text(o.path, text)) {
        return usage("cannot read '" + o.path + "'");
    }
    metaroce::sim::scenario s;
    try {
        s = metaroce::sim::parse_scenario_text(text);
    } catch (const metaroce::sim::scenario_error& e) {
        std::cerr << "metaroce-sim: " << o.path << ": " << e.what() << "\n";
        return k_exit_usage;
    }
    if (o.seed) {
        s.seed = *o.seed;
    }
    if (!o.quiet) {
        std::cerr << "metaroce-sim: running '" << s.name << "' (seed " << s.seed << ")\n";
    }
    metaroce::sim::sim_result r;
    {
        metaroce::sim::simulator sim(s);
        // Started with the run, so its wall time matches the result's wall_time_s.
        metaroce::sim_cli::heartbeat beat(s.name, o.quiet ? 0 : o.progress_s);
        if (beat.active()) {
            sim.on_progress([&beat](const metaroce::sim::sim_progress& p) { beat(p); });
        }
        r = sim.run();
    }
    auto j = metaroce::sim::to_json(r);
    if (!o.timeline) {
        j.erase("timeline");
    }
    if (!o.breakdown) {
        j.erase("breakdown");
    }
    std::cout << metaroce::sim_cli::compact_dump(j) << "\n";
    if (!o.quiet) {
        std::fprintf(stderr, "metaroce-sim: %s, %.3f Gb/s, %.3f s wall, %.0f events/s\n",
                     r.stop_reason.c_str(), r.goodput_gbps, r.wall_time_s, r.events_per_second);
        if (!o.timeline) {
            std::fprintf(stderr, "metaroce-sim: timeline (%zu bins of %g us) left out; --timeline adds it\n",
                         r.timeline.bytes.size(), r.timeline.interval_us);
        }
    }
    const bool ok = r.data_verified || r.stop_reason == "duration";
    return ok ? 0 : k_exit_failed;
}
