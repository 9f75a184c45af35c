// The app's datapath lcore: a dpdk::worker run to completion, the forwarding
// engines (testpmd's "set fwd"), and a mailbox through which the prompt, the
// control thread and telemetry run code on the lcore. The endpoint is single-
// threaded, so nothing else ever touches it: requests are pointers in an MPSC
// rte_ring that the lcore drains between bursts (no lock on the datapath).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/node.hpp"

struct rte_ring;

namespace metaroce::app {

enum class fwd_engine : uint8_t { write_bw, send_bw, read_bw, write_lat, send_lat };
const char* engine_name(fwd_engine e) noexcept;
bool parse_engine(const std::string& s, fwd_engine& out) noexcept;

// What one start..stop accumulated (read on the lcore, printed by stop).
struct run_stats {
    fwd_engine engine = fwd_engine::write_bw;
    uint64_t messages = 0;
    uint64_t bytes = 0;
    uint64_t errors = 0;
    uint64_t start_ns = 0;
    uint64_t stop_ns = 0;
    uint64_t lat_samples = 0;
    double lat_sum_us = 0;
    double lat_min_us = 0;
    double lat_max_us = 0;
};

class datapath {
public:
    datapath(const app_config& cfg, const dpdk::plane_admin* admin);
    ~datapath();

    // Starts the loop on `lcore` (a worker lcore).
    void launch(unsigned lcore);
    void quit_and_wait();
    unsigned lcore() const noexcept { return lcore_; }

    // Runs fn on the datapath lcore and waits for it; false after timeout_ms.
    bool call(std::function<void()> fn, uint64_t timeout_ms = 2000);

    // --- only from inside call() (lcore context) ---
    dpdk::worker& w() noexcept { return node_->w(); }
    const std::vector<dpdk::port_caps>& ports() const noexcept { return node_->ports(); }
    void set_engine(fwd_engine e) noexcept { engine_ = e; }
    fwd_engine engine() const noexcept { return engine_; }
    void start(uint64_t now_ns);
    run_stats stop(uint64_t now_ns);
    bool running() const noexcept { return running_; }
    uint64_t now_ns() const noexcept { return clk_.now_ns(); }
    size_t peers_ready() const noexcept;
    // Requests the prompt posts ("post send/recv") carry this wr_id; their completions
    // are kept (wr_id restored, at most 4096) until taken for "show cq".
    static uint64_t user_wr_id(uint64_t id) noexcept;
    std::vector<completion> take_user_completions();

private:
    struct conn_app {
        bool ready = false;       // peer's region known
        uint32_t slot = 0;        // control buffer slot
        uint64_t peer_va = 0;
        uint32_t peer_rkey = 0;
        uint64_t peer_len = 0;
        uint32_t outstanding = 0;
        uint64_t next = 0;
        std::map<uint64_t, uint64_t> post_time;  // latency engines: wr seq -> post time
    };
    static int loop_entry(void* self);
    int loop();
    void drain_mailbox();
    void on_event(const conn_event& e, uint64_t now);
    void on_completion(const completion& c, uint64_t now);
    void conn_up(conn_id c, uint64_t now);
    void post_ctrl_recv(conn_id c, uint32_t slot);
    void post_data_recv(conn_id c, uint64_t seq);
    void pump_engine(uint64_t now);

    app_config cfg_;
    std::unique_ptr<dpdk::node> node_;
    dpdk::tsc_clock clk_;
    rte_ring* mailbox_ = nullptr;
    std::atomic<bool> quit_{false};
    unsigned lcore_ = 0;
    bool launched_ = false;

    dpdk::eal_buffer region_;
    memory_region mr_{};
    dpdk::eal_buffer ctrl_;
    memory_region ctrl_mr_{};
    std::map<conn_id, conn_app> conns_;
    fwd_engine engine_ = fwd_engine::write_bw;
    bool running_ = false;
    run_stats run_;
    uint32_t slots_ = 1;
    std::vector<completion> user_cq_;
};

} // namespace metaroce::app
