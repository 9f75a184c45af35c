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
    // Steps until done(); throws on a failure, an interrupt or after --timeout: of
    // silence (no frame received) by default, since a size's data keeps frames coming;
    // of the whole wait with hard = true, for set-up steps that frames do not advance
    // (keepalives or a refused message's retries would otherwise keep it alive).
    void wait(const std::function<bool()>& done, const char* what, bool hard = false);
    void check_running();
    void on_event(const conn_event& e);
    void on_completion(const completion& c);
    void open_ctrl();
    // Server, before the client's hello: every incoming connection gets a control channel,
    // and the one the hello arrives on becomes the control connection (conns_[0]). The
    // two sides' connections need not be established in the same order (a set-up retry,
    // a slow server), and the client speaks on its first.
    void open_hello_channel(conn_id c);
    void bind_ctrl(size_t hello_index);
    // Server, after the hello: the client's qps connections, the control one first;
    // connections left over from an earlier set-up attempt of the client are closed.
    void keep_client_conns(uint32_t qps);
    void send_ctrl(const engines::ctrl_msg& m);
    engines::ctrl_msg wait_ctrl(const char* what, bool hard = false);
    engines::ctrl_msg expect_ctrl(engines::ctrl_type t, const char* what, bool hard = false);
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
    bool ctrl_bound_ = false;                     // ctrl_ is the control connection's
    static constexpr uint32_t k_hello_channels = 64; // connections heard before the hello
    std::vector<engines::ctrl_channel> hello_;    // server: one per connection until then
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
