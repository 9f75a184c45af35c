// The app's host of the shared test engines (app/common/engines), on the datapath
// lcore. For every connection it can test on: a control channel, the engine this node
// drives ("set fwd" and "start": active) and the one it serves for its peer (passive),
// each in an area of its own, registered when its first run starts. A run starts with
// start/ready and ends with done/more/verdict (engines/ctrl_msg.hpp), so both sides
// agree on what was sent and the passive side checks what landed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "app_config.hpp"
#include "dpdk/eal.hpp"
#include "engines/ctrl_channel.hpp"
#include "engines/engine.hpp"
#include "engines/run_protocol.hpp"

namespace metaroce::app {

// What one start..stop accumulated on every connection.
struct run_stats {
    engines::test_kind test = engines::test_kind::write_bw;
    uint64_t messages = 0;
    uint64_t bytes = 0;
    uint64_t errors = 0;
    uint64_t start_ns = 0;
    uint64_t stop_ns = 0;
    engines::latency_summary latency;
};

// How the data checks of the last run came out.
struct run_check {
    uint32_t conns = 0;     // connections the run ended on
    uint32_t answered = 0;  // ... whose peer sent its verdict
    uint32_t checked = 0;   // ... where some side compared bytes
    uint64_t bad_bytes = 0;
};

class engine_host {
public:
    engine_host(endpoint& ep, const app_config& cfg);
    engine_host(const engine_host&) = delete;
    engine_host& operator=(const engine_host&) = delete;

    void on_event(const conn_event& e, uint64_t now_ns);
    // A completion tagged ctrl_*, active_* or passive_*.
    void on_completion(const completion& c, uint64_t now_ns);
    void pump(uint64_t now_ns);

    // Test areas are then registered with the I/O too, to be sent from in place.
    void send_in_place(class dp_io* io) noexcept { io_ = io; }
    void set_test(engines::test_kind t) noexcept { test_ = t; }
    engines::test_kind test() const noexcept { return test_; }
    // Starts the test on every connection; returns how many.
    size_t start(uint64_t now_ns);
    // Stops it; the runs then end with their peers (ending()).
    run_stats stop(uint64_t now_ns);
    bool running() const noexcept { return running_; }
    bool ending() const noexcept;
    run_check check() const noexcept;
    // Connections a test can run on.
    size_t connections() const noexcept { return peers_.size(); }

private:
    enum class phase : uint8_t { idle, starting, running, draining, ending, ended };
    struct area {
        dpdk::eal_buffer buf;
        memory_region mr{};
    };
    struct peer {
        uint32_t slot = 0; // its share of the control buffer
        engines::ctrl_channel ctrl;
        std::unique_ptr<engines::engine> active;
        phase state = phase::idle;
        engines::engine_setup setup;  // the active engine's, until ready names the peer's area
        uint64_t local_bad = 0;       // what the active side's own check found
        bool local_checked = false;
        engines::verdict_info verdict;
        bool answered = false;
        std::unique_ptr<engines::engine> passive;
        area mine;   // the active engine's
        area theirs; // the passive engine's
    };

    void open(conn_id c, uint64_t now_ns);
    void close(conn_id c);
    void start_on(conn_id c, peer& p, uint64_t now_ns);
    void on_message(conn_id c, peer& p, const engines::ctrl_msg& m, uint64_t now_ns);
    void serve(conn_id c, peer& p, const engines::ctrl_msg& start, uint64_t now_ns);
    void end_run(peer& p, uint64_t now_ns);
    bool ensure(area& a, uint64_t bytes);
    void forget(const area& a) noexcept; // after its deregistration from the endpoint
    engines::engine_setup setup_of(conn_id c, const area& a) const;

    endpoint& ep_;
    class dp_io* io_ = nullptr; // zero copy: test areas are registered with it too
    uint64_t message_size_;
    uint32_t tx_depth_;
    dpdk::eal_buffer ctrl_buf_;
    memory_region ctrl_mr_{};
    std::map<conn_id, peer> peers_;
    engines::test_kind test_ = engines::test_kind::write_bw;
    bool running_ = false;
    uint64_t start_ns_ = 0;
};

} // namespace metaroce::app
