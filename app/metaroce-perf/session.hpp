// One metaroce-perf run over the transport, hosting the shared test engines: the
// connections, the in-band exchange of regions and parameters (perftest's "data
// exchange", here control messages on stream 0 of the first connection), and one
// engine per message size: the client's active, the server's passive.
//   session.cpp: polling, waiting, the control channel, setup and teardown
//   client.cpp, server.cpp: perftest's handshake and rows on either side
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dpdk/eal.hpp"
#include "engines/ctrl_channel.hpp"
#include "engines/engine.hpp"
#include "engines/run_protocol.hpp"
#include "options.hpp"
#include "perf_io.hpp"
#include "report.hpp"
#include "worker_share.hpp"

namespace metaroce::perf {

class session {
public:
    session(perf_io& io, const options& o, const run_info& info, const worker_share& share = {});
    // Runs the whole test; returns the process exit code.
    int run() { return o_.client ? run_client() : run_server(); }
    // The rows and verification, for the main lcore to add up (several workers).
    const session_result& result() const noexcept { return result_; }

private:
    // session.cpp
    void step();
    // Steps until done(); throws on a failure, an interrupt or after --timeout.
    void wait(const std::function<bool()>& done, const char* what);
    void check_running();
    void on_event(const conn_event& e);
    void on_completion(const completion& c);
    void open_ctrl();
    void send_ctrl(const engines::ctrl_msg& m);
    engines::ctrl_msg wait_ctrl(const char* what);
    engines::ctrl_msg expect_ctrl(engines::ctrl_type t, const char* what);
    void alloc_region(uint64_t len);
    engines::engine_setup area() const;
    void start_engine(engines::role r, const engines::engine_setup& s);
    address_line local_address() const;
    address_line remote_address() const;
    // perftest's header, both address lines and the table's title.
    void print_preamble() const;
    void connect_all();
    // memif pairs queue i with the peer's queue i: both sides need as many workers.
    void check_peer_workers(uint64_t peer, const char* who) const;
    void close_all();

    // client.cpp
    int run_client();
    bw_result client_bw(uint64_t size);
    lat_result client_lat(uint64_t size);
    engines::verdict_info finish_size(engines::ctrl_msg done);

    // server.cpp
    int run_server();
    void serve_start(const engines::ctrl_msg& start);
    void wait_client_gone();

    perf_io& w_; // DPDK ports or kernel UDP (perf_io.hpp)
    endpoint& ep_;
    options o_;
    run_info info_;
    dpdk::tsc_clock clk_;
    uint64_t now_ = 0;

    dpdk::eal_buffer ctrl_buf_;
    memory_region ctrl_mr_{};
    engines::ctrl_channel ctrl_;
    std::deque<engines::ctrl_msg> ctrl_in_;
    dpdk::eal_buffer data_;
    memory_region data_mr_{};
    uint64_t half_ = 0;         // the client's echoes land at data + half_

    std::vector<conn_id> conns_;
    uint32_t established_ = 0;
    uint32_t setup_failures_ = 0; // client: connections that failed in setup this try
    bool connected_ = false;      // client: every connection was established once
    std::string fatal_;
    uint64_t remote_va_ = 0;
    uint32_t remote_rkey_ = 0;
    uint32_t remote_ip_ = 0;

    std::unique_ptr<engines::engine> eng_; // the current size's

    worker_share share_;
    session_result result_;
    // Several workers: rows, verification and JSON are the main lcore's (summed).
    bool own_report() const noexcept { return share_.count == 1; }
};

} // namespace metaroce::perf
