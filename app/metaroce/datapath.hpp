// One of the app's datapath lcores (a lane): a node worker run to completion, the host of the test
// engines ("set fwd" / "start", and serving the peers' tests) and the mailbox through
// which the prompt, the control thread and telemetry run code here.
//
//   loop: io.poll (DPDK worker or UDP sockets, dp_io.hpp) -> connection events ->
//         completions (to the engines, or kept for "show cq") -> engines pump -> mailbox
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "app_config.hpp"
#include "dpdk/eal.hpp"
#include "dp_io.hpp"
#include "engine_host.hpp"
#include "mailbox.hpp"

namespace metaroce::app {

class datapath {
public:
    // One lane per worker of the node (config lcores; one on the udp backend).
    static std::vector<std::unique_ptr<datapath>> make_lanes(const app_config& cfg, const dpdk::plane_admin* admin,
                                                             size_t workers);
    datapath(std::unique_ptr<dp_io> io, const app_config& cfg, size_t index);
    ~datapath();
    size_t index() const noexcept { return index_; } // the node's worker this lane runs

    // Starts the loop on `lcore` (a worker lcore).
    void launch(unsigned lcore);
    void quit_and_wait();
    unsigned lcore() const noexcept { return lcore_; }

    // Runs fn on the datapath lcore and waits for it; false after timeout_ms.
    bool call(std::function<void()> fn, uint64_t timeout_ms = 2000);

    // --- only from inside call() (lcore context) ---
    dp_io& w() noexcept { return *io_; } // the packet I/O: DPDK ports or UDP sockets
    const std::vector<dpdk::port_caps>& ports() const noexcept { return io_->ports(); }
    engine_host& engines() noexcept { return *host_; }
    uint64_t now_ns() const noexcept { return clk_.now_ns(); }
    // Requests the prompt posts ("post send/recv") carry this wr_id; their completions
    // are kept (wr_id restored, at most 4096) until taken for "show cq".
    static uint64_t user_wr_id(uint64_t id) noexcept;
    std::vector<completion> take_user_completions();

private:
    static int loop_entry(void* self);
    int loop();
    void on_completion(const completion& c, uint64_t now_ns);

    std::unique_ptr<dp_io> io_;
    std::unique_ptr<engine_host> host_;
    dpdk::tsc_clock clk_;
    mailbox mailbox_;
    std::atomic<bool> quit_{false};
    unsigned lcore_ = 0;
    size_t index_ = 0;
    bool launched_ = false;
    std::vector<completion> user_cq_;
};

} // namespace metaroce::app
