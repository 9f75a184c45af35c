// The shared test engines (app/common/engines) hosted on one connection of a UDP-backend
// node, speaking the run protocol of engines/ctrl_msg.hpp like the metaroce app's own
// host does: it serves the peer's runs (passive, checking what landed) and drives its
// own (active: start/ready, the run, done/more/verdict). Plain std::vector memory: the
// UDP backend needs no special buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/ctrl_channel.hpp"
#include "engines/engine.hpp"
#include "engines/run_protocol.hpp"

namespace metaroce::interop {

// One run this node drove.
struct drive_report {
    engines::test_kind test = engines::test_kind::write_bw;
    uint64_t messages = 0;
    uint64_t bytes = 0;
    uint64_t errors = 0;          // completions in error, or a refused post
    std::string failure;
    bool local_checked = false;   // read_bw: the requester compares what it read
    uint64_t local_bad = 0;
    bool answered = false;        // the peer's verdict arrived
    engines::verdict_info verdict;
    uint64_t run_ns = 0;          // ready .. stop (the drain after it adds what the peer owed)
    bool ok() const noexcept;
};

// One run this node served for its peer.
struct serve_report {
    engines::test_kind test = engines::test_kind::write_bw;
    uint64_t peer_iterations = 0;  // what the peer's done says it completed
    uint64_t completions = 0;      // receives completed here (a WRITE or READ leaves none)
    uint64_t errors = 0;
    engines::verdict_info verdict; // what we told the peer
};

class peer_host {
public:
    peer_host(endpoint& ep, conn_id c, uint64_t message_size, uint32_t depth);
    peer_host(const peer_host&) = delete;
    peer_host& operator=(const peer_host&) = delete;

    conn_id conn() const noexcept { return conn_; }
    // A completion of our connection (any kind: control, active or passive).
    void on_completion(const completion& c, uint64_t now_ns);
    void pump(uint64_t now_ns);

    // Active side: asks the peer to get ready for test t; false if the start could
    // not be posted.
    bool start_run(engines::test_kind t, uint64_t now_ns);
    bool running() const noexcept { return phase_ == phase::running; }
    // No new request from now on; the run then ends with the peer's verdict.
    void stop_run(uint64_t now_ns);
    bool run_ended() const noexcept { return phase_ == phase::ended; }
    drive_report report() const;

    // Passive side: runs started for the peer (ready sent), the last one's test, and
    // the runs served to the end (verdict sent), in order.
    uint64_t serving_started() const noexcept { return serving_started_; }
    engines::test_kind serving_test() const noexcept { return serving_test_; }
    const std::vector<serve_report>& served() const noexcept { return served_; }

private:
    enum class phase : uint8_t { idle, starting, running, draining, ending, ended };
    struct area {
        std::vector<uint8_t> bytes;
        memory_region mr{};
    };

    bool ensure(area& a, uint64_t bytes);
    engines::engine_setup setup_of(const area& a) const;
    void on_message(const engines::ctrl_msg& m, uint64_t now_ns);
    void serve(const engines::ctrl_msg& start, uint64_t now_ns);
    void end_run(uint64_t now_ns);

    endpoint& ep_;
    conn_id conn_;
    uint64_t size_;
    uint32_t depth_;
    std::vector<uint8_t> ctrl_buf_;
    memory_region ctrl_mr_{};
    engines::ctrl_channel ctrl_;

    phase phase_ = phase::idle;
    engines::test_kind test_ = engines::test_kind::write_bw;
    engines::engine_setup setup_;
    std::unique_ptr<engines::engine> active_;
    area mine_;
    bool answered_ = false;
    engines::verdict_info verdict_;
    uint64_t ready_ns_ = 0;
    uint64_t stop_ns_ = 0;

    std::unique_ptr<engines::engine> passive_;
    area theirs_;
    uint64_t serving_started_ = 0;
    engines::test_kind serving_test_ = engines::test_kind::write_bw;
    std::vector<serve_report> served_;
};

} // namespace metaroce::interop
