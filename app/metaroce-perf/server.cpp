// The server's side of a run: answers the client's region with its own, then serves
// each message size with a passive engine until the client says bye.
#include <bit>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "engines/run_protocol.hpp"
#include "session.hpp"

namespace metaroce::perf {

using namespace engines;

int session::run_server()
{
    if (share_.count > 1) {
        // Served only when a client worker dials this worker's address: wait for one
        // until the workers that got theirs are all done (--timeout while none has).
        const uint64_t deadline = clk_.now_ns() + uint64_t(o_.timeout_s) * 1'000'000'000ull;
        while (conns_.empty()) {
            const unsigned got = share_.clients->load(std::memory_order_acquire);
            if (got != 0 && share_.finished->load(std::memory_order_acquire) == got) {
                return 0;
            }
            step();
            check_running();
            if (got == 0 && now_ > deadline) {
                throw std::runtime_error("timed out after " + std::to_string(o_.timeout_s) +
                                         " s waiting for a client to connect");
            }
        }
        share_.clients->fetch_add(1, std::memory_order_acq_rel);
    }
    wait([&] { return !conns_.empty(); }, "a client to connect");
    const ctrl_msg h = expect_ctrl(ctrl_type::region, "the client's hello", true);
    if (test_kind(h.test) != o_.test) {
        throw std::runtime_error(std::string("the client runs ") + test_name(test_kind(h.test)) +
                                 ", this server " + test_name(o_.test) +
                                 " (run the same test on both sides)");
    }
    o_.qps = h.qps.host();
    check_peer_workers(h.a.host(), "client");
    remote_va_ = h.va.host();
    remote_rkey_ = h.rkey.host();
    alloc_region(h.len.host());
    // The client sends its hello once all its connections are up: they are all here.
    keep_client_conns(o_.qps);
    wait([&] { return conns_.size() >= o_.qps; }, "all connections of the client", true);
    ctrl_msg r = make_ctrl(ctrl_type::region);
    r.va = wire::be64_t::from_host(data_mr_.va);
    r.rkey = wire::be32_t::from_host(data_mr_.rkey);
    r.len = wire::be64_t::from_host(data_.size());
    r.a = wire::be64_t::from_host(share_.count);
    send_ctrl(r);

    print_preamble();
    std::vector<bw_result> bw_rows;
    std::vector<lat_result> lat_rows;
    uint64_t bad_total = 0;
    uint64_t size = 0;
    bool first_done = true;
    for (;;) {
        const ctrl_msg m = wait_ctrl("the client's next step");
        if (m.type == ctrl_type::bye) {
            break;
        }
        if (m.type == ctrl_type::start) {
            size = m.size.host();
            serve_start(m);
            first_done = true;
            continue;
        }
        if (m.type != ctrl_type::done || !eng_) {
            throw std::runtime_error("protocol: expected start, done or bye");
        }
        if (first_done) {
            // The row is the client's measurement (a later done only adds the requests
            // that filled our last receives).
            first_done = false;
            if (o_.is_bw()) {
                bw_rows.push_back(bw_row(o_, size, m.iters.host(), m.b.host(), std::bit_cast<double>(m.a.host())));
            } else {
                lat_rows.push_back(lat_result{size, m.iters.host()});
            }
        }
        const auto answers = answer_done(*eng_, m, o_.verify);
        for (const ctrl_msg& a : answers) {
            send_ctrl(a);
        }
        if (answers.back().type == ctrl_type::verdict) {
            bad_total += read_verdict(answers.back()).bad;
            eng_.reset();
            if (!own_report()) {
                continue;
            } else if (o_.is_bw() && o_.output != output_kind::full) {
                print_bw_number(o_, bw_rows.back());
            } else if (o_.is_bw()) {
                print_bw_row(bw_rows.back());
            }
        }
    }
    result_ = session_result{bw_rows, lat_rows, bad_total, true};
    if (!own_report()) {
        wait_client_gone();
        return bad_total != 0 ? 2 : 0;
    }
    if (o_.output == output_kind::full) {
        print_dashes();
    }
    // read_bw's server is only read from: nothing landed here to check.
    print_verification(o_, o_.verify && o_.test != test_kind::read_bw, bad_total);
    if (!o_.out_json.empty() &&
        !write_json(o_.out_json, o_, info_, bw_rows, lat_rows, o_.verify && bad_total == 0,
                    !o_.verify ? "skipped" : bad_total == 0 ? "ok" : "FAILED")) {
        return 1;
    }
    wait_client_gone();
    if (bad_total != 0) {
        return 2;
    }
    return check_limits(o_, bw_rows) ? 0 : 1;
}

void session::serve_start(const ctrl_msg& start)
{
    if (test_of(start) != o_.test) {
        throw std::runtime_error("protocol: the client started another test");
    }
    start_engine(role::passive, passive_setup(start, area()));
    send_ctrl(make_ctrl(ctrl_type::ready));
}

void session::wait_client_gone()
{
    // Let the last ACKs go out, then wait for the client's close.
    const uint64_t until = clk_.now_ns() + 300'000'000ull;
    while (clk_.now_ns() < until) {
        step();
        const auto info = ep_.inspect(conns_[0]);
        if (!info || info->state == conn_state::closed) {
            break;
        }
    }
    w_.flush();
    // The client tears down first; leave only once its memif/link is gone, so the PMD's
    // disconnect handling never races our own port close. Do not poll the port meanwhile:
    // net_memif handles the peer's disconnect in the EAL interrupt thread with no lock
    // against an rx burst on our lcore, and such a burst faulted copying from the shared
    // region (SIGSEGV in memif's rx memcpy; about 1 run in 2 with the default 2 KiB
    // bsize, where a 4 KiB frame spans 3 descriptors). The connection is closed, so
    // nothing is left to receive: just watch the link.
    // With several workers the link stays up until every client worker is done, and
    // this worker's queues still carry its siblings' frames (crossed connections, no
    // rte_flow): only its poll hands them on, so it keeps polling (link_guard keeps the
    // bursts clear of memif's disconnect handling). Sleeping here starved a sibling's
    // connection for up to 2 s: RTO storm, then "peer stopped answering".
    const uint64_t link_until = clk_.now_ns() + 2'000'000'000ull;
    while (clk_.now_ns() < link_until && info_.link_up && info_.link_up()) {
        if (share_.count > 1) {
            w_.poll(clk_.now_ns());
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
}

} // namespace metaroce::perf
