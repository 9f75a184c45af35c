// The metaroce application: ports, the datapath lcore, the control thread that
// publishes plane health, the prompt's command table and telemetry endpoints.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "datapath.hpp"
#include "dpdk/planes.hpp"

namespace metaroce::app {

class application {
public:
    explicit application(const app_config& cfg);
    ~application();

    // Executes one prompt line; returns false when the line was "quit".
    bool execute(const std::string& line);
    bool quit_requested() const noexcept { return quit_; }
    datapath& dp() noexcept { return *dp_; }
    const app_config& config() const noexcept { return cfg_; }

    // JSON snapshots (for telemetry and "show ... json").
    std::string stats_json();
    std::string conns_json();
    std::string paths_json(conn_id c);
    std::string planes_json();

    // Control thread body: plane health from link state and admin flags.
    void control_loop();

    // The command table entry points (public for the table).
    void cmd_help(const std::vector<std::string>& a);
    void cmd_show(const std::vector<std::string>& a);
    void cmd_set(const std::vector<std::string>& a);
    void cmd_connect(const std::vector<std::string>& a);
    void cmd_start(const std::vector<std::string>& a);
    void cmd_stop(const std::vector<std::string>& a);
    void cmd_clear(const std::vector<std::string>& a);
    void cmd_quit(const std::vector<std::string>& a);
    // Application control from the prompt (the conformance runner drives the app with
    // these): regions, work requests, their completions, closing a connection.
    void cmd_mr(const std::vector<std::string>& a);
    void cmd_post(const std::vector<std::string>& a);
    void cmd_close(const std::vector<std::string>& a);

private:
    void show_port_stats(const std::string& which);
    void show_conn(const std::vector<std::string>& a);
    void show_path(const std::vector<std::string>& a);
    void show_planes();
    void show_cq();
    void publish_planes() noexcept;
    const memory_region& user_region(uint32_t lkey) const;

    app_config cfg_;
    dpdk::plane_admin admin_;                           // effective state, read by lcores
    std::array<std::atomic<bool>, dpdk::k_max_planes> admin_down_{}; // "set plane N down"
    std::array<std::atomic<bool>, dpdk::k_max_planes> link_down_{};  // from the control thread
    std::array<bool, dpdk::k_max_planes> published_{};  // control thread only
    std::unique_ptr<datapath> dp_;
    // Regions registered with "mr reg" (the buffer outlives its registration).
    struct user_mr {
        dpdk::eal_buffer buf;
        memory_region mr;
    };
    std::vector<user_mr> user_mrs_;
    std::atomic<bool> quit_{false};
    std::atomic<bool> ctrl_quit_{false};
    bool ctrl_running_ = false;
    uint64_t ctrl_thread_ = 0;
    bool started_ = false;
};

} // namespace metaroce::app
