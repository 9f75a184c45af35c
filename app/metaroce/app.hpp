// The metaroce application: ports, the datapath lanes (one per worker lcore), the control thread that
// publishes plane health, the prompt's command table and telemetry endpoints.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rte_config.h>

#include "app_config.hpp"
#include "datapath.hpp"
#include "dpdk/planes.hpp"

namespace metaroce::app {

// Adds one lane's counters to a sum (the max_* ones as maxima).
void add_lane_counters(dpdk::worker_counters& sum, const dpdk::worker_counters& w);

class application {
public:
    explicit application(const app_config& cfg);
    ~application();

    // Executes one prompt line; returns false when the line was "quit".
    bool execute(const std::string& line);
    bool quit_requested() const noexcept { return quit_; }
    // Ctrl-C (safe in a signal handler): the command that waits (connect, stop) gives up.
    static void interrupt() noexcept;
    // Whether Ctrl-C came since the current command began.
    static bool interrupted() noexcept;
    datapath& dp() noexcept { return *dp_; } // lane 0
    size_t lanes() const noexcept { return lanes_.size(); }
    // "lcore 1" or "lcores 1,2" (the lanes' lcores).
    std::string lcores_text() const;
    const app_config& config() const noexcept { return cfg_; }

    // JSON snapshots (for telemetry and "show ... json").
    std::string stats_json();
    std::string conns_json();
    // Connections [start, start+count) in table order, with the total and the next
    // start (0 when this page is the last).
    std::string conns_page_json(size_t start, size_t count);
    std::string paths_json(conn_id c);
    std::string planes_json();

    // Control thread body: plane health from link state and admin flags.
    void control_loop();

    // The prompt's handlers, one per command of the table in commands.cpp;
    // each gets the whole line, split into words.
    using args = std::vector<std::string>;
    void cmd_help(const args& a);
    // cmd_show.cpp
    void show_config(const args& a);
    // cmd_port.cpp: testpmd's port commands
    void show_port_info(const args& a);
    void show_port_stats(const args& a);
    void clear_port_stats(const args& a);
    void show_conn(const args& a);
    void show_path(const args& a);
    void show_planes(const args& a);
    void show_stats(const args& a);
    void show_xstats(const args& a);
    // cmd_run.cpp
    void set_plane(const args& a);
    void set_fwd(const args& a);
    void cmd_connect(const args& a);
    void cmd_close(const args& a);
    void cmd_start(const args& a);
    void cmd_stop(const args& a);
    void show_fwd_stats(const args& a);
    void clear_stats(const args& a);
    void cmd_quit(const args& a);
    // cmd_verbs.cpp: application control (the conformance runner drives the app with
    // these): regions, work requests, their completions.
    void mr_reg(const args& a);
    void mr_dereg(const args& a);
    void mr_load(const args& a);
    void mr_read(const args& a);
    void post_recv(const args& a);
    void post_send(const args& a);
    void show_cq(const args& a);

private:
    static void clear_interrupt() noexcept; // a new command starts
    void publish_planes() noexcept;
    struct user_mr;
    // The "mr reg" region one of whose lkeys (any worker's) is lkey.
    const user_mr& user_region(uint32_t lkey) const;
    // The lane a verbs command on connection c acts on: its owner (lane 0 when none
    // has it: the endpoint then answers "no such connection").
    datapath& verbs_lane(conn_id c);
    // Lanes (app_lanes.cpp): the one holding connection c (nullptr: none), the one with
    // the fewest connections (where "connect" places a new one), every lane's counters.
    datapath* lane_of(conn_id c);
    datapath& least_loaded();
    dpdk::worker_counters sum_counters();
    counters sum_transport();
    // One line per lane: its worker, lcore, connections and frames ("show fwd stats").
    void print_workers();

    app_config cfg_;
    dpdk::plane_admin admin_;                           // effective state, read by lcores
    std::array<std::atomic<bool>, dpdk::k_max_planes> admin_down_{}; // "set plane N down"
    std::array<std::atomic<bool>, dpdk::k_max_planes> link_down_{};  // from the control thread
    std::array<bool, dpdk::k_max_planes> published_{};  // control thread only
    // One datapath lane per worker lcore; dp_ is lane 0 (ports, the mailbox of the
    // commands that touch no connection).
    std::vector<std::unique_ptr<datapath>> lanes_;
    datapath* dp_ = nullptr;
    // Regions registered with "mr reg" (the buffer outlives its registration), on
    // every lane: each worker's endpoint has its own keys for the one buffer.
    struct user_mr {
        dpdk::eal_buffer buf;
        memory_region mr;                 // worker 0's keys (what "mr reg" names it by)
        std::vector<memory_region> lanes; // [k]: worker k's; [0] == mr
    };
    std::vector<user_mr> user_mrs_;
    std::atomic<bool> quit_{false};
    std::atomic<bool> ctrl_quit_{false};
    bool ctrl_running_ = false;
    uint64_t ctrl_thread_ = 0;
    bool started_ = false;
    // "show port stats": the counters and time of the last show, per port (for pps/bps).
    struct rate_mark {
        uint64_t ipackets = 0, opackets = 0, ibytes = 0, obytes = 0, ns = 0;
    };
    std::array<rate_mark, RTE_MAX_ETHPORTS> rate_marks_{};
};

} // namespace metaroce::app
