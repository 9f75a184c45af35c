// The app's datapath lanes, one per worker lcore: finding a connection's lane, placing
// a new one, summing the lanes' counters. Each lane's endpoint is touched only through
// its own mailbox (call()).
#include <algorithm>
#include <cstdio>
#include <string>

#include "app.hpp"

namespace metaroce::app {

datapath* application::lane_of(conn_id c)
{
    for (auto& l : lanes_) {
        bool here = false;
        l->call([&] { here = l->w().ep().inspect(c).has_value(); });
        if (here) {
            return l.get();
        }
    }
    return nullptr;
}

datapath& application::least_loaded()
{
    datapath* best = dp_;
    size_t fewest = SIZE_MAX;
    for (auto& l : lanes_) {
        size_t n = 0;
        l->call([&] { n = l->w().ep().connections().size(); });
        if (n < fewest) { // ties: the lowest worker
            fewest = n;
            best = l.get();
        }
    }
    return *best;
}

void add_lane_counters(dpdk::worker_counters& sum, const dpdk::worker_counters& w)
{
    const uint64_t gap = std::max(sum.max_poll_gap_ns, w.max_poll_gap_ns);
    const uint64_t burst = std::max(sum.max_tx_burst_ns, w.max_tx_burst_ns);
    add_counters(sum, w, dpdk::worker_counter_fields());
    sum.max_poll_gap_ns = gap; // maxima stay maxima
    sum.max_tx_burst_ns = burst;
}

dpdk::worker_counters application::sum_counters()
{
    dpdk::worker_counters sum;
    for (auto& l : lanes_) {
        dpdk::worker_counters w;
        l->call([&] { w = l->w().counters(); });
        add_lane_counters(sum, w);
    }
    return sum;
}

counters application::sum_transport()
{
    counters sum;
    for (auto& l : lanes_) {
        counters t;
        l->call([&] { t = l->w().ep().stats(); });
        add_counters(sum, t, counter_fields());
    }
    return sum;
}

std::string application::lcores_text() const
{
    std::string out = lanes_.size() == 1 ? "lcore " : "lcores ";
    for (size_t k = 0; k < lanes_.size(); ++k) {
        if (k != 0) {
            out += ',';
        }
        out += std::to_string(lanes_[k]->lcore());
    }
    return out;
}

void application::print_workers()
{
    std::printf("  %-7s %-6s %-6s %-14s %-14s %-12s %-12s\n", "worker", "lcore", "conns", "rx_frames", "tx_frames",
                "handoff_in", "handoff_out");
    for (auto& l : lanes_) {
        size_t conns = 0;
        dpdk::worker_counters w;
        l->call([&] {
            conns = l->w().ep().connections().size();
            w = l->w().counters();
        });
        std::printf("  %-7zu %-6u %-6zu %-14llu %-14llu %-12llu %-12llu\n", l->index(), l->lcore(), conns,
                    (unsigned long long)w.rx_frames, (unsigned long long)w.tx_frames,
                    (unsigned long long)w.handoff_in, (unsigned long long)w.handoff_out);
    }
}

} // namespace metaroce::app
