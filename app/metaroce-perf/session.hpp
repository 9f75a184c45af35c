// One metaroce-perf run over the transport: connection setup, the in-band
// exchange of buffers and parameters (perftest's "data exchange", here on
// stream 0 of the first connection), the tests, verification and the report.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/worker.hpp"
#include "options.hpp"
#include "report.hpp"
#include "wire_ctrl.hpp"

namespace metaroce::perf {

class session {
public:
    session(dpdk::worker& w, const options& o, const run_info& info);
    // Runs the whole test; returns the process exit code.
    int run();

private:
    enum class mode : uint8_t { idle, bw, send_server, read_lat_none, write_lat_server, send_lat_server, send_lat_client };

    void step();
    template <typename Pred>
    void wait(Pred&& done, const char* what);
    void on_completion(const completion& c);
    void on_event(const conn_event& e);

    void post_ctrl_recv(uint32_t slot);
    void send_ctrl(const ctrl_msg& m);
    ctrl_msg wait_ctrl(const char* what);
    void alloc_region(uint64_t len);
    void post_data_recvs(uint64_t size);

    int run_client();
    int run_server();
    void connect_all();
    bw_result client_bw(uint64_t size, uint32_t slots);
    lat_result client_lat(uint64_t size);
    void server_size(const ctrl_msg& start);
    uint64_t verify_region(uint64_t offset, uint64_t len, uint64_t pattern_offset) const;
    void close_all();

    dpdk::worker& w_;
    endpoint& ep_;
    options o_;
    run_info info_;
    dpdk::tsc_clock clk_;
    uint64_t now_ = 0;

    dpdk::eal_buffer ctrl_buf_;
    memory_region ctrl_mr_{};
    dpdk::eal_buffer data_;
    memory_region data_mr_{};
    uint64_t half_ = 0;         // latency tests: echoes land at data + half_

    std::vector<conn_id> conns_;
    uint32_t established_ = 0;
    std::string fatal_;
    std::deque<ctrl_msg> ctrl_in_;
    uint32_t ctrl_send_slot_ = 0;
    uint64_t ctrl_sends_done_ = 0;
    uint64_t ctrl_sends_posted_ = 0;

    uint64_t remote_va_ = 0;
    uint32_t remote_rkey_ = 0;
    uint32_t remote_ip_ = 0;

    // Current test.
    mode mode_ = mode::idle;
    uint64_t size_ = 0;
    uint32_t slots_ = 1;
    uint64_t target_iters_ = 0;        // per connection
    std::vector<uint64_t> posted_;     // per connection
    std::vector<uint64_t> completed_;
    std::vector<uint64_t> recv_posted_;
    std::vector<uint64_t> recv_done_;
    uint64_t total_completed_ = 0;
    uint64_t bad_length_ = 0;
    uint64_t lat_next_ = 0;            // write_lat server: next tag expected
    std::vector<uint64_t> bins_;       // bytes completed per bin (peak bandwidth)
    uint64_t bin_start_ns_ = 0;
    std::vector<uint8_t> pattern_;
};

} // namespace metaroce::perf
