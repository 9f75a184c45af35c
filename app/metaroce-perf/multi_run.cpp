#include "multi_run.hpp"

#include <rte_launch.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "perf_io.hpp"
#include "session.hpp"
#include "worker_share.hpp"

namespace metaroce::perf {

extern std::atomic<bool> g_quit;

namespace {

struct slot {
    std::unique_ptr<dpdk_io> io;
    std::unique_ptr<session> s; // null: no session here, the worker only polls
    int rc = 0;
    std::string error;     // what the session threw
    bool run = false;      // launched
};

struct run_state {
    std::vector<slot> slots;
    std::atomic<unsigned> clients{0};        // server sessions a client came to
    std::atomic<unsigned> served_done{0};    // of those, the ones that ended
    std::atomic<unsigned> finished{0};       // sessions that returned
    unsigned sessions = 0;
};

void run_slot(run_state& st, size_t k)
{
    slot& sl = st.slots[k];
    if (sl.s) {
        try {
            sl.rc = sl.s->run();
        } catch (const std::exception& e) {
            sl.error = e.what();
            sl.rc = 1;
            g_quit.store(true); // the other workers stop too: the run has failed
        }
        if (sl.s->result().served) {
            st.served_done.fetch_add(1, std::memory_order_acq_rel);
        }
        st.finished.fetch_add(1, std::memory_order_acq_rel);
    }
    // Keep polling until every session is done: frames for the others may arrive on
    // this worker's queues (no rte_flow) and only its poll hands them on.
    const dpdk::tsc_clock clk;
    while (st.finished.load(std::memory_order_acquire) < st.sessions) {
        sl.io->poll(clk.now_ns());
    }
    sl.io->flush();
}

struct launch_arg {
    run_state* st;
    size_t k;
};

int lcore_entry(void* p)
{
    const auto* a = static_cast<launch_arg*>(p);
    run_slot(*a->st, a->k);
    return 0;
}

} // namespace

int run_workers(dpdk::node& n, const options& o, const run_info& info)
{
    const auto workers = uint16_t(n.workers());
    // Client: the -q connections spread over the workers, one worker at least per QP;
    // latency tests run one ping-pong (worker 0).
    const uint16_t active = o.client ? uint16_t(o.is_bw() ? std::min<uint32_t>(workers, o.qps) : 1)
                                     : workers;
    run_state st;
    st.slots.resize(workers);
    for (uint16_t k = 0; k < workers; ++k) {
        slot& sl = st.slots[k];
        sl.run = true;
        sl.io = std::make_unique<dpdk_io>(n.w(k));
        sl.io->yield_when_idle(o.yield_idle);
        if (k >= active) {
            continue;
        }
        options ok = o;
        if (o.client) {
            ok.qps = o.qps / active + (k < o.qps % active ? 1 : 0);
            ok.server_addr = dpdk::worker_addr(o.server_addr, o.cross_workers ? uint16_t((k + 1) % workers) : k);
        }
        worker_share share;
        share.index = k;
        share.count = workers;
        share.clients = &st.clients;
        share.finished = &st.served_done;
        sl.s = std::make_unique<session>(*sl.io, ok, info, share);
        ++st.sessions;
    }
    // Worker k on the k-th worker lcore; worker 0 on this (main) lcore.
    std::vector<launch_arg> args(workers);
    std::vector<unsigned> lcores;
    unsigned lc = 0;
    RTE_LCORE_FOREACH_WORKER(lc) {
        lcores.push_back(lc);
    }
    for (uint16_t k = 1; k < workers; ++k) {
        args[k] = {&st, k};
        if (rte_eal_remote_launch(lcore_entry, &args[k], lcores.at(k - 1)) != 0) {
            g_quit.store(true);
            st.slots[k].run = false;
            st.finished.fetch_add(st.slots[k].s ? 1 : 0);
            st.slots[k].error = "cannot launch worker " + std::to_string(k) + " on lcore " +
                                std::to_string(lcores[k - 1]);
            st.slots[k].rc = 1;
        }
    }
    run_slot(st, 0);
    for (uint16_t k = 1; k < workers; ++k) {
        if (st.slots[k].run) {
            rte_eal_wait_lcore(lcores[k - 1]);
        }
    }
    for (uint16_t k = 0; k < workers; ++k) {
        if (!st.slots[k].error.empty()) {
            std::fprintf(stderr, "metaroce-perf: worker %u: %s\n", unsigned(k), st.slots[k].error.c_str());
        }
    }
    for (uint16_t k = 0; k < workers; ++k) {
        if (!st.slots[k].error.empty()) {
            // The first failure is the cause; the others were told to stop by it.
            const bool stopped = st.slots[k].error.find("interrupted") != std::string::npos;
            bool other = false;
            for (uint16_t j = 0; j < workers; ++j) {
                other |= j != k && !st.slots[j].error.empty() &&
                         st.slots[j].error.find("interrupted") == std::string::npos;
            }
            if (!stopped || !other) {
                throw std::runtime_error("worker " + std::to_string(k) + ": " + st.slots[k].error);
            }
        }
    }
    std::vector<session_result> parts;
    uint64_t bad = 0;
    for (uint16_t k = 0; k < workers; ++k) {
        if (st.slots[k].s && st.slots[k].s->result().served) {
            parts.push_back(st.slots[k].s->result());
            bad += parts.back().bad;
        }
    }
    const std::vector<bw_result> bw = sum_bw_rows(o, parts);
    const std::vector<lat_result> lat = parts.empty() ? std::vector<lat_result>{} : parts[0].lat;
    const bool full = o.output == output_kind::full;
    if (o.is_bw()) {
        if (full) {
            print_bw_title(o);
        }
        for (const bw_result& r : bw) {
            full ? print_bw_row(r) : print_bw_number(o, r);
        }
    } else {
        if (full) {
            print_lat_title();
        }
        for (const lat_result& r : lat) {
            full ? print_lat_row(r) : print_lat_number(r);
        }
    }
    if (full) {
        print_dashes();
    }
    if (full) {
        std::printf(" Workers         : %u (%zu ran a session)\n", unsigned(workers), parts.size());
    }
    // read_bw's server is only read from: nothing landed there to check.
    const bool checked = o.verify && (o.client || o.test != test_kind::read_bw);
    print_verification(o, checked, bad);
    if (!o.out_json.empty() &&
        !write_json(o.out_json, o, info, bw, lat, o.verify && bad == 0,
                    !o.verify ? "skipped" : bad == 0 ? "ok" : "FAILED")) {
        return 1;
    }
    if (bad != 0) {
        return 2;
    }
    return check_limits(o, bw) ? 0 : 1;
}

} // namespace metaroce::perf
