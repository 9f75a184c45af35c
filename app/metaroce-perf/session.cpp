#include "session.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <stdexcept>

#include "dpdk/port.hpp"
#include "engines/wr_tag.hpp"

namespace metaroce::perf {

extern std::atomic<bool> g_quit;

using namespace engines;

session::session(perf_io& io, const options& o, const run_info& info, const worker_share& share)
    : w_(io), ep_(io.ep()), o_(o), info_(info), share_(share)
{
    // The client's one channel, or the server's channels until the hello names its one.
    ctrl_buf_ = dpdk::eal_buffer("perf_ctrl", ctrl_channel::k_bytes * (o_.client ? 1 : k_hello_channels), -1);
    auto mr = ep_.memory().register_region(ctrl_buf_.data(), ctrl_buf_.size(), access::local_write);
    if (!mr) {
        throw std::runtime_error("cannot register the control buffer");
    }
    ctrl_mr_ = *mr;
}

void session::alloc_region(uint64_t len)
{
    if (data_.size() == len) {
        return;
    }
    if (data_mr_.lkey != 0) {
        ep_.memory().deregister(data_mr_.lkey);
        w_.mem_removed(data_.data()); // frames sent in place from it are freed first
    }
    data_ = dpdk::eal_buffer("perf_data", len, -1);
    auto mr = ep_.memory().register_region(
        data_.data(), len, access::local_write | access::remote_write | access::remote_read);
    if (!mr) {
        throw std::runtime_error("cannot register the data buffer");
    }
    data_mr_ = *mr;
    w_.mem_added(data_.data(), len);
    half_ = len / 2;
}

engine_setup session::area() const
{
    return setup_over(ep_, conns_, data_mr_);
}

void session::start_engine(role r, const engine_setup& s)
{
    eng_ = make_engine(o_.test, r);
    eng_->start(s);
    if (!eng_->failure().empty()) {
        throw std::runtime_error("protocol: " + eng_->failure());
    }
}

void session::step()
{
    now_ = clk_.now_ns();
    // A held pass: the ACKs owed for what arrives here are built after what this step
    // posts (an echo), and the ACKs received here are taken in after it
    // (dpdk::worker::send_held).
    w_.poll_held(now_);
    std::array<conn_event, 16> ev;
    for (size_t n = ep_.poll_events(ev), i = 0; i < n; ++i) {
        on_event(ev[i]);
    }
    std::array<completion, 64> cq;
    const uint64_t t_cq = dpdk::stage_times::begin();
    const size_t ncq = ep_.poll_cq(cq);
    for (size_t i = 0; i < ncq; ++i) {
        on_completion(cq[i]);
    }
    if (dpdk::k_stage_timing && ncq != 0 && w_.stages() != nullptr) {
        w_.stages()->end(dpdk::stage::completion, t_cq, ncq);
    }
    uint64_t now = now_;
    if (eng_) {
        // A fresh time: latency engines stamp the echoes they notice with it.
        now = clk_.now_ns();
        eng_->pump(now);
        if (!eng_->failure().empty() && fatal_.empty()) {
            fatal_ = eng_->failure();
        }
    }
    w_.send_held(now);
}

void session::check_running()
{
    if (!fatal_.empty()) {
        throw std::runtime_error(fatal_);
    }
    if (g_quit.load(std::memory_order_relaxed)) {
        throw std::runtime_error("interrupted");
    }
}

void session::wait(const std::function<bool()>& done, const char* what, bool hard)
{
    // --timeout bounds silence, not the wait: the server waits out a whole size (an
    // 8 MiB -a step takes long on a software link) while frames keep arriving.
    const uint64_t span = uint64_t(o_.timeout_s) * 1'000'000'000ull;
    uint64_t deadline = clk_.now_ns() + span;
    uint64_t frames = w_.rx_frames();
    while (!done()) {
        step();
        if (const uint64_t f = w_.rx_frames(); !hard && f != frames) {
            frames = f;
            deadline = now_ + span;
        }
        if (!fatal_.empty()) {
            throw std::runtime_error(fatal_);
        }
        if (g_quit.load(std::memory_order_relaxed)) {
            throw std::runtime_error(std::string("interrupted while waiting for ") + what);
        }
        if (now_ > deadline) {
            throw std::runtime_error("timed out after " + std::to_string(o_.timeout_s) +
                                     " s waiting for " + what);
        }
    }
}

void session::on_event(const conn_event& e)
{
    switch (e.what) {
    case conn_event::kind::established:
        // A server takes every connection until the hello says how many are the client's.
        if (e.incoming && (o_.client || !ctrl_bound_ || conns_.size() < o_.qps)) {
            conns_.push_back(e.conn);
            remote_ip_ = e.peer;
            if (!o_.client && !ctrl_bound_) {
                open_hello_channel(e.conn); // which is the client's first is not known yet
            }
        }
        ++established_;
        break;
    case conn_event::kind::closed: break; // the client closes after the last test
    case conn_event::kind::error:
        if (o_.client && !connected_) {
            ++setup_failures_; // connect_all() tries again or says why
        } else if (!o_.client && !ctrl_bound_) {
            // Before the hello: a left-over of the client's earlier attempt expired.
            std::erase(conns_, e.conn);
        } else if (fatal_.empty()) {
            fatal_ = "connection " + std::to_string(e.conn) + " to " + dpdk::format_ipv4(e.peer) +
                     " failed (the peer stopped answering or closed it)";
        }
        break;
    }
}

void session::on_completion(const completion& c)
{
    if (c.status != wc_status::success) {
        if (std::find(conns_.begin(), conns_.end(), c.conn) == conns_.end()) {
            return; // a connection we dropped (keep_client_conns): its receives are flushed
        }
        if (fatal_.empty()) { // the first failure is the cause; the flushes follow from it
            fatal_ = "completion error on connection " + std::to_string(c.conn) + ": " +
                     std::string(to_string(c.status));
        }
        return;
    }
    const wr_kind kind = wr_tag::of(c.wr_id).kind;
    if (is_ctrl(kind)) {
        // The control connection's channel, or (server, until the hello) one per connection.
        ctrl_channel* ch = ctrl_bound_ && c.conn == ctrl_.conn() ? &ctrl_ : nullptr;
        size_t hi = 0;
        for (; ch == nullptr && hi < hello_.size(); ++hi) {
            if (hello_[hi].conn() == c.conn) {
                ch = &hello_[hi];
                break;
            }
        }
        if (ch == nullptr) {
            fatal_ = "control completion on connection " + std::to_string(c.conn) + ", not the control one";
            return;
        }
        ctrl_msg m;
        const auto got = ch->on_completion(c, m);
        if (got == ctrl_channel::got::message && ch != &ctrl_) {
            if (ctrl_bound_) {
                fatal_ = "control message on connection " + std::to_string(c.conn) + ", not the control one";
                return;
            }
            bind_ctrl(hi);
        }
        if (got == ctrl_channel::got::message) {
            ctrl_in_.push_back(m);
        } else if (got == ctrl_channel::got::malformed) {
            fatal_ = "malformed control message (" + std::to_string(c.byte_len) + " bytes)";
        }
    } else if ((is_active(kind) || is_passive(kind)) && eng_) {
        eng_->on_completion(c, clk_.now_ns());
    } else {
        fatal_ = "completion with an unknown wr_id";
    }
}

void session::open_ctrl()
{
    ctrl_ = ctrl_channel(ep_, conns_[0], ctrl_buf_.data(), ctrl_mr_.va, ctrl_mr_.lkey);
    ctrl_bound_ = true;
    if (const post_result r = ctrl_.open(); r != post_result::ok) {
        fatal_ = std::string("post_recv (control): ") + std::string(to_string(r));
    }
}

void session::open_hello_channel(conn_id c)
{
    if (hello_.size() == k_hello_channels) {
        return; // more connections than a client opens: the hello comes on an earlier one
    }
    const uint64_t off = hello_.size() * ctrl_channel::k_bytes;
    hello_.emplace_back(ep_, c, ctrl_buf_.data() + off, ctrl_mr_.va + off, ctrl_mr_.lkey);
    if (const post_result r = hello_.back().open(); r != post_result::ok && fatal_.empty()) {
        fatal_ = std::string("post_recv (control): ") + std::string(to_string(r));
    }
}

void session::bind_ctrl(size_t hello_index)
{
    ctrl_ = hello_[hello_index];
    ctrl_bound_ = true;
    const auto it = std::find(conns_.begin(), conns_.end(), ctrl_.conn());
    if (it != conns_.end()) {
        std::rotate(conns_.begin(), it, it + 1); // the control connection first, the rest in order
    }
}

void session::keep_client_conns(uint32_t qps)
{
    // Left-overs of an earlier attempt were established before this attempt's: the
    // newest qps - 1 besides the control connection are the client's.
    while (conns_.size() > std::max<uint32_t>(qps, 1)) {
        ep_.close(conns_[1], clk_.now_ns());
        conns_.erase(conns_.begin() + 1);
    }
}

void session::send_ctrl(const ctrl_msg& m)
{
    wait([&] { return ctrl_.can_send(); }, "a control send slot");
    const post_result r = ctrl_.send(m, clk_.now_ns());
    if (r != post_result::ok) {
        throw std::runtime_error("post_send (control): " + std::string(to_string(r)));
    }
}

ctrl_msg session::wait_ctrl(const char* what, bool hard)
{
    wait([&] { return !ctrl_in_.empty(); }, what, hard);
    ctrl_msg m = ctrl_in_.front();
    ctrl_in_.pop_front();
    return m;
}

ctrl_msg session::expect_ctrl(ctrl_type t, const char* what, bool hard)
{
    const ctrl_msg m = wait_ctrl(what, hard);
    if (m.type != t) {
        throw std::runtime_error(std::string("protocol: unexpected message while waiting for ") + what);
    }
    return m;
}

// As perftest's client, retry until --timeout: the server may still be starting. A
// connection in setup fails only when the peer never answered, so a failure to the
// end means nobody at that address.
void session::connect_all()
{
    const uint64_t start = clk_.now_ns();
    const uint64_t deadline = start + uint64_t(o_.timeout_s) * 1'000'000'000ull;
    const uint32_t per_try = ep_.config().transport.connect_retries + 1;
    const std::string server = dpdk::format_ipv4(o_.server_addr);
    uint32_t tries = 0;
    for (;;) {
        conns_.clear();
        established_ = 0;
        setup_failures_ = 0;
        for (uint32_t q = 0; q < o_.qps; ++q) {
            const conn_id c = ep_.connect(o_.server_addr, clk_.now_ns());
            if (c == k_no_conn) {
                throw std::runtime_error("connect: the connection table is full");
            }
            conns_.push_back(c);
        }
        ++tries;
        while (established_ < o_.qps && setup_failures_ == 0) {
            step();
            check_running();
        }
        if (setup_failures_ == 0) {
            break;
        }
        for (conn_id c : conns_) {
            ep_.close(c, clk_.now_ns());
        }
        if (clk_.now_ns() >= deadline) {
            char took[32];
            std::snprintf(took, sizeof took, "%.1f", double(clk_.now_ns() - start) / 1e9);
            throw std::runtime_error("cannot connect to the server at " + server +
                                     ": connection setup timed out (no answer to " +
                                     std::to_string(tries * per_try) + " attempts in " + took +
                                     " s); is the metaroce-perf server running, and is that its "
                                     "--local address (default 10.0.0.1)?" +
                                     (share_.index == 0 ? "" :
                                      " This is the address of the server's worker " + std::to_string(share_.index) +
                                      ": give the server at least " + std::to_string(share_.index + 1) +
                                      " lcores (-l), as many as this client."));
        }
        if (tries == 1) {
            std::fprintf(stderr, "metaroce-perf: no answer from the server at %s yet; retrying for up to %u s "
                         "(--timeout)\n", server.c_str(), o_.timeout_s);
        }
    }
    connected_ = true;
    remote_ip_ = o_.server_addr;
    open_ctrl();
}

void session::check_peer_workers(uint64_t peer, const char* who) const
{
    peer = std::max<uint64_t>(peer, 1);
    if (peer == share_.count || info_.device.find("memif") == std::string::npos) {
        return;
    }
    throw std::runtime_error(std::string("the ") + who + " runs " + std::to_string(peer) +
                             " worker(s), this side " + std::to_string(share_.count) +
                             ": net_memif pairs queue i with the peer's queue i and a queue the peer "
                             "does not have carries nothing; give both sides as many lcores (-l)");
}

void session::close_all()
{
    for (conn_id c : conns_) {
        ep_.close(c, clk_.now_ns());
    }
    const uint64_t until = clk_.now_ns() + 200'000'000ull;
    while (clk_.now_ns() < until) {
        step();
        bool open = false;
        for (conn_id c : conns_) {
            const auto info = ep_.inspect(c);
            open |= info && info->state != conn_state::closed && info->state != conn_state::error;
        }
        if (!open) {
            break;
        }
    }
    w_.flush();
}

address_line session::local_address() const
{
    address_line a;
    a.conn = conns_[0];
    a.rkey = data_mr_.rkey;
    a.va = data_mr_.va;
    a.ip = w_.node();
    if (const auto info = ep_.inspect(conns_[0]); info && !info->path.empty()) {
        a.psn = info->path[0].next_psn;
    }
    return a;
}

address_line session::remote_address() const
{
    address_line a;
    const auto info = ep_.inspect(conns_[0]);
    a.conn = info ? info->peer_conn : 0;
    a.rkey = remote_rkey_;
    a.va = remote_va_;
    a.ip = remote_ip_;
    if (info && !info->path.empty()) {
        // The next PSN we expect from the peer on path 0: its send PSN there.
        a.psn = info->path[0].rx_expected;
    }
    return a;
}

void session::print_preamble() const
{
    if (o_.output != output_kind::full || share_.index != 0) {
        return; // perftest: --output prints the bare numbers only
    }
    print_header(o_, info_);
    print_addresses(local_address(), remote_address());
    if (!own_report()) {
        return; // the main lcore prints the title with the summed rows
    }
    if (o_.is_bw()) {
        print_bw_title(o_);
    } else {
        print_lat_title();
    }
}

} // namespace metaroce::perf
