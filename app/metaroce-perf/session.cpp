#include "session.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "dpdk/port.hpp"

namespace metaroce::perf {

extern std::atomic<bool> g_quit;

namespace {

constexpr uint32_t k_ctrl_slots = 16;          // 8 receive, 8 send
constexpr uint32_t k_ctrl_recvs = 8;
constexpr uint64_t k_min_region = 8ull << 20;  // bandwidth tests cycle through it
constexpr uint64_t k_bin_ns = 1'000'000;       // peak bandwidth granularity

// wr_id layout: kind (8 bits) | connection index (16) | sequence (40).
enum class wr_kind : uint8_t { ctrl_recv = 1, ctrl_send, data, data_recv };
uint64_t make_wr(wr_kind k, uint32_t conn, uint64_t seq)
{
    return uint64_t(k) << 56 | uint64_t(conn & 0xffff) << 40 | (seq & ((1ull << 40) - 1));
}
wr_kind wr_kind_of(uint64_t id) { return wr_kind(id >> 56); }
uint32_t wr_conn(uint64_t id) { return uint32_t(id >> 40) & 0xffff; }
uint64_t wr_seq(uint64_t id) { return id & ((1ull << 40) - 1); }

uint8_t pattern_byte(uint64_t k) { return uint8_t(k * 7 + (k >> 8) * 13 + 0x5a); }
uint8_t lat_tag(uint64_t i) { return uint8_t(i % 255 + 1); }

uint64_t region_len(const options& o)
{
    const uint64_t max_size = o.all_sizes ? (1ull << 23) : o.size;
    return std::max(k_min_region, 2 * max_size);
}

double to_unit(const options& o, double bytes_per_s)
{
    return o.report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / (1 << 20);
}

} // namespace

session::session(dpdk::worker& w, const options& o, const run_info& info)
    : w_(w), ep_(w.ep()), o_(o), info_(info)
{
    ctrl_buf_ = dpdk::eal_buffer("perf_ctrl", k_ctrl_slots * sizeof(ctrl_msg), -1);
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
    }
    data_ = dpdk::eal_buffer("perf_data", len, -1);
    auto mr = ep_.memory().register_region(
        data_.data(), len, access::local_write | access::remote_write | access::remote_read);
    if (!mr) {
        throw std::runtime_error("cannot register the data buffer");
    }
    data_mr_ = *mr;
    half_ = len / 2;
    pattern_.resize(len);
    for (uint64_t k = 0; k < len; ++k) {
        pattern_[k] = pattern_byte(k);
    }
}

void session::step()
{
    now_ = clk_.now_ns();
    w_.poll(now_);
    std::array<conn_event, 16> ev;
    for (size_t n = ep_.poll_events(ev), i = 0; i < n; ++i) {
        on_event(ev[i]);
    }
    std::array<completion, 64> cq;
    for (size_t n = ep_.poll_cq(cq), i = 0; i < n; ++i) {
        on_completion(cq[i]);
    }
    if (mode_ == mode::write_lat_server && lat_next_ < target_iters_ && size_ > 0 &&
        data_.data()[size_ - 1] == lat_tag(lat_next_)) {
        send_wr wr;
        wr.wr_id = make_wr(wr_kind::data, 0, lat_next_);
        wr.op = wr_opcode::write;
        wr.stream = k_data_stream;
        wr.local = sge{data_mr_.va, uint32_t(size_), data_mr_.lkey};
        wr.remote_va = remote_va_ + half_;
        wr.rkey = remote_rkey_;
        const post_result r = ep_.post_send(conns_[0], wr, now_);
        if (r != post_result::ok) {
            fatal_ = std::string("post_send (write_lat echo): ") + std::string(to_string(r));
        }
        ++lat_next_;
    }
}

template <typename Pred>
void session::wait(Pred&& done, const char* what)
{
    const uint64_t deadline = clk_.now_ns() + uint64_t(o_.timeout_s) * 1'000'000'000ull;
    while (!done()) {
        step();
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
        if (e.incoming) {
            if (conns_.size() < o_.qps || o_.client) {
                conns_.push_back(e.conn);
                remote_ip_ = e.peer;
                if (conns_.size() == 1) {
                    for (uint32_t s = 0; s < k_ctrl_recvs; ++s) {
                        post_ctrl_recv(s);
                    }
                }
            }
        }
        ++established_;
        break;
    case conn_event::kind::closed:
        if (mode_ != mode::idle || ctrl_in_.empty()) {
            // A close we did not start is fatal only while a test runs.
        }
        break;
    case conn_event::kind::error:
        fatal_ = "connection " + std::to_string(e.conn) + " to " + dpdk::format_ipv4(e.peer) +
                 " failed";
        break;
    }
}

void session::on_completion(const completion& c)
{
    if (c.status != wc_status::success) {
        fatal_ = "completion error on connection " + std::to_string(c.conn) + ": " +
                 std::string(to_string(c.status));
        return;
    }
    const uint64_t id = c.wr_id;
    switch (wr_kind_of(id)) {
    case wr_kind::ctrl_recv: {
        const uint32_t slot = uint32_t(wr_seq(id));
        ctrl_msg m;
        std::memcpy(&m, ctrl_buf_.data() + slot * sizeof(ctrl_msg), sizeof m);
        if (c.byte_len == sizeof m && m.magic.host() == k_ctrl_magic) {
            ctrl_in_.push_back(m);
        } else {
            fatal_ = "malformed control message (" + std::to_string(c.byte_len) + " bytes)";
        }
        post_ctrl_recv(slot);
        break;
    }
    case wr_kind::ctrl_send: ++ctrl_sends_done_; break;
    case wr_kind::data: {
        const uint32_t ci = wr_conn(id);
        ++completed_[ci];
        ++total_completed_;
        if (mode_ == mode::bw && !bins_.empty()) {
            const uint64_t bin = (now_ - bin_start_ns_) / k_bin_ns;
            if (bin >= bins_.size()) {
                bins_.resize(bin + 1, 0);
            }
            bins_[bin] += size_;
        }
        break;
    }
    case wr_kind::data_recv: {
        const uint32_t ci = wr_conn(id);
        ++recv_done_[ci];
        if (c.byte_len != size_) {
            ++bad_length_;
        }
        if (mode_ == mode::send_lat_server) {
            send_wr wr;
            wr.wr_id = make_wr(wr_kind::data, ci, recv_done_[ci]);
            wr.op = wr_opcode::send;
            wr.stream = k_data_stream;
            wr.local = sge{data_mr_.va, uint32_t(size_), data_mr_.lkey};
            const post_result r = ep_.post_send(conns_[ci], wr, now_);
            if (r != post_result::ok) {
                fatal_ = std::string("post_send (send_lat echo): ") + std::string(to_string(r));
            }
        }
        post_data_recvs(size_);
        break;
    }
    default: fatal_ = "completion with an unknown wr_id"; break;
    }
}

void session::post_ctrl_recv(uint32_t slot)
{
    recv_wr wr;
    wr.wr_id = make_wr(wr_kind::ctrl_recv, 0, slot);
    wr.local = sge{ctrl_mr_.va + slot * sizeof(ctrl_msg), sizeof(ctrl_msg), ctrl_mr_.lkey};
    const post_result r = ep_.post_recv(conns_[0], k_ctrl_stream, wr);
    if (r != post_result::ok) {
        fatal_ = std::string("post_recv (control): ") + std::string(to_string(r));
    }
}

void session::send_ctrl(const ctrl_msg& m)
{
    // Wait for the send slot we reuse to be free: at most 8 in flight.
    wait([&] { return ctrl_sends_posted_ - ctrl_sends_done_ < k_ctrl_slots - k_ctrl_recvs; },
         "a control send slot");
    const uint32_t slot = k_ctrl_recvs + ctrl_send_slot_;
    ctrl_send_slot_ = (ctrl_send_slot_ + 1) % (k_ctrl_slots - k_ctrl_recvs);
    std::memcpy(ctrl_buf_.data() + slot * sizeof(ctrl_msg), &m, sizeof m);
    send_wr wr;
    wr.wr_id = make_wr(wr_kind::ctrl_send, 0, slot);
    wr.op = wr_opcode::send;
    wr.stream = k_ctrl_stream;
    wr.local = sge{ctrl_mr_.va + slot * sizeof(ctrl_msg), sizeof(ctrl_msg), ctrl_mr_.lkey};
    const post_result r = ep_.post_send(conns_[0], wr, clk_.now_ns());
    if (r != post_result::ok) {
        throw std::runtime_error("post_send (control): " + std::string(to_string(r)));
    }
    ++ctrl_sends_posted_;
}

ctrl_msg session::wait_ctrl(const char* what)
{
    wait([&] { return !ctrl_in_.empty(); }, what);
    ctrl_msg m = ctrl_in_.front();
    ctrl_in_.pop_front();
    return m;
}

void session::post_data_recvs(uint64_t size)
{
    const uint32_t rq = ep_.config().transport.rq_depth;
    for (size_t ci = 0; ci < conns_.size(); ++ci) {
        while (recv_posted_[ci] < target_iters_ && recv_posted_[ci] - recv_done_[ci] < rq) {
            const uint64_t k = recv_posted_[ci];
            recv_wr wr;
            wr.wr_id = make_wr(wr_kind::data_recv, uint32_t(ci), k);
            const uint64_t off = mode_ == mode::send_lat_client ? half_ : (k % slots_) * size;
            wr.local = sge{data_mr_.va + off, uint32_t(size), data_mr_.lkey};
            const post_result r = ep_.post_recv(conns_[ci], k_data_stream, wr);
            if (r == post_result::queue_full) {
                break;
            }
            if (r != post_result::ok) {
                fatal_ = std::string("post_recv (data): ") + std::string(to_string(r));
                return;
            }
            ++recv_posted_[ci];
        }
    }
}

uint64_t session::verify_region(uint64_t offset, uint64_t len, uint64_t pattern_offset) const
{
    if (std::memcmp(data_.data() + offset, pattern_.data() + pattern_offset, len) == 0) {
        return 0;
    }
    uint64_t bad = 0;
    for (uint64_t k = 0; k < len; ++k) {
        bad += data_.data()[offset + k] != pattern_[pattern_offset + k];
    }
    return bad;
}

int session::run()
{
    return o_.client ? run_client() : run_server();
}

void session::connect_all()
{
    for (uint32_t q = 0; q < o_.qps; ++q) {
        const conn_id c = ep_.connect(o_.server_addr, clk_.now_ns());
        if (c == k_no_conn) {
            throw std::runtime_error("connect: the connection table is full");
        }
        conns_.push_back(c);
    }
    remote_ip_ = o_.server_addr;
    for (uint32_t s = 0; s < k_ctrl_recvs; ++s) {
        post_ctrl_recv(s);
    }
    wait([&] { return established_ >= o_.qps; }, "the server to accept (is it running?)");
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

namespace {
address_line address_of(const endpoint& ep, conn_id c, const memory_region& mr, uint32_t ip)
{
    address_line a;
    a.conn = c;
    a.rkey = mr.rkey;
    a.va = mr.va;
    a.ip = ip;
    if (const auto info = ep.inspect(c); info && !info->path.empty()) {
        a.psn = info->path[0].next_psn;
    }
    return a;
}
} // namespace

int session::run_client()
{
    // Allocate and fill the buffer before connecting: nothing polls meanwhile, and on a
    // loaded host that can take longer than the peer's idle timeout.
    const uint64_t rlen = region_len(o_);
    alloc_region(rlen);
    connect_all();
    ctrl_msg h{};
    h.magic = wire::be32_t::from_host(k_ctrl_magic);
    h.type = ctrl_type::hello;
    h.test = uint8_t(o_.test);
    h.qps = wire::be16_t::from_host(uint16_t(o_.qps));
    h.region_len = wire::be64_t::from_host(rlen);
    h.va = wire::be64_t::from_host(data_mr_.va);
    h.rkey = wire::be32_t::from_host(data_mr_.rkey);
    send_ctrl(h);
    const ctrl_msg r = wait_ctrl("the server's hello reply");
    if (r.type != ctrl_type::hello_reply) {
        throw std::runtime_error("protocol: expected hello_reply");
    }
    remote_va_ = r.va.host();
    remote_rkey_ = r.rkey.host();

    print_header(o_, info_);
    address_line remote{};
    remote.conn = ep_.inspect(conns_[0]) ? ep_.inspect(conns_[0])->peer_conn : 0;
    remote.rkey = remote_rkey_;
    remote.va = remote_va_;
    remote.ip = remote_ip_;
    print_addresses(address_of(ep_, conns_[0], data_mr_, w_.node()), remote);
    if (o_.is_bw()) {
        print_bw_title(o_);
    } else {
        print_lat_title();
    }

    std::vector<uint64_t> sizes;
    if (o_.all_sizes) {
        for (uint64_t s = 2; s <= (1ull << 23); s *= 2) {
            sizes.push_back(s);
        }
    } else {
        sizes.push_back(o_.size);
    }
    std::vector<bw_result> bw_rows;
    std::vector<lat_result> lat_rows;
    uint64_t bad_total = 0;
    bool all_checked = o_.verify;
    for (uint64_t size : sizes) {
        const uint32_t slots =
            uint32_t(std::clamp<uint64_t>(half_ / size, 1, o_.is_bw() ? o_.tx_depth : 1));
        const uint64_t iters = o_.duration_s != 0 ? UINT64_MAX : o_.iters;
        ctrl_msg s{};
        s.magic = wire::be32_t::from_host(k_ctrl_magic);
        s.type = ctrl_type::start;
        s.test = uint8_t(o_.test);
        s.size = wire::be64_t::from_host(size);
        s.iters = wire::be64_t::from_host(iters);
        s.slots = wire::be32_t::from_host(slots);
        send_ctrl(s);
        if (wait_ctrl("the server to get ready").type != ctrl_type::ready) {
            throw std::runtime_error("protocol: expected ready");
        }
        ctrl_msg d{};
        d.magic = wire::be32_t::from_host(k_ctrl_magic);
        d.type = ctrl_type::done;
        d.size = wire::be64_t::from_host(size);
        uint64_t local_bad = 0;
        if (o_.is_bw()) {
            const bw_result row = client_bw(size, slots);
            bw_rows.push_back(row);
            d.iters = wire::be64_t::from_host(row.iters);
            d.a = wire::be64_t::from_host(std::bit_cast<uint64_t>(row.peak));
            d.b = wire::be64_t::from_host(uint64_t(row.seconds * 1e9));
            if (o_.verify && o_.test == test_kind::read_bw) {
                local_bad = verify_region(0, std::min<uint64_t>(row.iters, slots) * size, 0);
            }
        } else {
            lat_result row = client_lat(size);
            lat_rows.push_back(row);
            d.iters = wire::be64_t::from_host(row.iters);
            if (o_.verify) {
                local_bad = verify_region(half_, size - 1, 0);
            }
        }
        send_ctrl(d);
        const ctrl_msg v = wait_ctrl("the server's verdict");
        if (v.type != ctrl_type::verdict) {
            throw std::runtime_error("protocol: expected verdict");
        }
        if (v.slots.host() == 2) {
            all_checked = all_checked && o_.test == test_kind::read_bw;
        }
        bad_total += local_bad + v.a.host();
        if (o_.is_bw()) {
            print_bw_row(bw_rows.back());
        } else {
            print_lat_row(lat_rows.back());
        }
    }
    print_dashes();
    ctrl_msg bye{};
    bye.magic = wire::be32_t::from_host(k_ctrl_magic);
    bye.type = ctrl_type::bye;
    send_ctrl(bye);
    wait([&] { return ctrl_sends_done_ == ctrl_sends_posted_; }, "the server to take bye");
    std::string state = !o_.verify ? "skipped" : bad_total == 0 ? "ok" : "FAILED";
    if (o_.verify) {
        if (bad_total == 0) {
            std::printf(" Data verification: ok\n");
        } else {
            std::printf(" Data verification: FAILED (%llu bytes differ)\n",
                        static_cast<unsigned long long>(bad_total));
        }
    }
    if (!o_.out_json.empty() &&
        !write_json(o_.out_json, o_, info_, bw_rows, lat_rows, o_.verify && bad_total == 0, state)) {
        return 1;
    }
    close_all();
    (void)all_checked;
    return bad_total == 0 ? 0 : 2;
}

bw_result session::client_bw(uint64_t size, uint32_t slots)
{
    mode_ = mode::bw;
    size_ = size;
    slots_ = slots;
    const size_t q = conns_.size();
    posted_.assign(q, 0);
    completed_.assign(q, 0);
    total_completed_ = 0;
    if (o_.test == test_kind::read_bw) {
        std::memset(data_.data(), 0, uint64_t(slots) * size);
    } else {
        std::memcpy(data_.data(), pattern_.data(), uint64_t(slots) * size);
    }
    const wr_opcode op = o_.test == test_kind::write_bw  ? wr_opcode::write
                         : o_.test == test_kind::send_bw ? wr_opcode::send
                                                         : wr_opcode::read;
    const uint64_t start = clk_.now_ns();
    const uint64_t stop_at =
        o_.duration_s != 0 ? start + uint64_t(o_.duration_s) * 1'000'000'000ull : UINT64_MAX;
    const uint64_t iters = o_.duration_s != 0 ? UINT64_MAX : o_.iters;
    bins_.assign(64, 0);
    bin_start_ns_ = start;
    const uint64_t deadline =
        start + (uint64_t(o_.timeout_s) + o_.duration_s) * 1'000'000'000ull;
    bool posting = true;
    uint64_t last = start;
    for (;;) {
        if (posting && clk_.now_ns() >= stop_at) {
            posting = false;
        }
        bool pending = false;
        for (size_t ci = 0; ci < q; ++ci) {
            while (posting && posted_[ci] < iters && posted_[ci] - completed_[ci] < o_.tx_depth) {
                const uint64_t i = posted_[ci];
                const uint64_t off = (i % slots) * size;
                send_wr wr;
                wr.wr_id = make_wr(wr_kind::data, uint32_t(ci), i);
                wr.op = op;
                wr.stream = k_data_stream;
                wr.local = sge{data_mr_.va + off, uint32_t(size), data_mr_.lkey};
                if (op != wr_opcode::send) {
                    wr.remote_va = remote_va_ + off;
                    wr.rkey = remote_rkey_;
                }
                const post_result r = ep_.post_send(conns_[ci], wr, now_);
                if (r == post_result::queue_full) {
                    break;
                }
                if (r != post_result::ok) {
                    throw std::runtime_error("post_send: " + std::string(to_string(r)));
                }
                ++posted_[ci];
            }
            pending |= completed_[ci] < posted_[ci] || (posting && posted_[ci] < iters);
        }
        if (!pending) {
            break;
        }
        const uint64_t before = total_completed_;
        step();
        if (total_completed_ != before) {
            last = now_;
        }
        if (!fatal_.empty()) {
            throw std::runtime_error(fatal_);
        }
        if (g_quit.load(std::memory_order_relaxed)) {
            throw std::runtime_error("interrupted");
        }
        if (now_ > deadline) {
            throw std::runtime_error("timed out during the test (" +
                                     std::to_string(total_completed_) + " completions)");
        }
    }
    mode_ = mode::idle;
    bw_result r;
    r.bytes = size;
    r.iters = total_completed_;
    r.seconds = double(last - start) / 1e9;
    const double bytes = double(size) * double(total_completed_);
    const double avg_bps = r.seconds > 0 ? bytes / r.seconds : 0;
    double peak_bps = avg_bps;
    const uint64_t full_bins = (last - start) / k_bin_ns;
    for (uint64_t b = 0; b < full_bins && b < bins_.size(); ++b) {
        peak_bps = std::max(peak_bps, double(bins_[b]) * 1e9 / double(k_bin_ns));
    }
    r.avg = to_unit(o_, avg_bps);
    r.peak = to_unit(o_, peak_bps);
    r.msg_rate_mpps = r.seconds > 0 ? double(total_completed_) / r.seconds / 1e6 : 0;
    return r;
}

lat_result session::client_lat(uint64_t size)
{
    size_ = size;
    slots_ = 1;
    const uint64_t iters = o_.iters;
    target_iters_ = iters;
    posted_.assign(conns_.size(), 0);
    completed_.assign(conns_.size(), 0);
    recv_posted_.assign(conns_.size(), 0);
    recv_done_.assign(conns_.size(), 0);
    std::memcpy(data_.data(), pattern_.data(), size);
    std::memset(data_.data() + half_, 0, size);
    const bool write = o_.test == test_kind::write_lat;
    if (!write) {
        mode_ = mode::send_lat_client;
        post_data_recvs(size);
    }
    std::vector<double> samples;
    samples.reserve(iters);
    volatile uint8_t* echo_last = data_.data() + half_ + size - 1;
    for (uint64_t i = 0; i < iters; ++i) {
        if (write) {
            data_.data()[size - 1] = lat_tag(i);
        }
        send_wr wr;
        wr.wr_id = make_wr(wr_kind::data, 0, i);
        wr.op = write ? wr_opcode::write : wr_opcode::send;
        wr.stream = k_data_stream;
        wr.local = sge{data_mr_.va, uint32_t(size), data_mr_.lkey};
        if (write) {
            wr.remote_va = remote_va_;
            wr.rkey = remote_rkey_;
        }
        const uint64_t t0 = clk_.now_ns();
        const post_result r = ep_.post_send(conns_[0], wr, t0);
        if (r != post_result::ok) {
            throw std::runtime_error("post_send: " + std::string(to_string(r)));
        }
        if (write) {
            wait([&] { return *echo_last == lat_tag(i); }, "the write echo");
        } else {
            wait([&] { return recv_done_[0] > i; }, "the send echo");
        }
        samples.push_back(double(clk_.now_ns() - t0) / 2e3);
    }
    // Drain the requester completions before the next size.
    wait([&] { return completed_[0] >= iters; }, "the last completions");
    mode_ = mode::idle;
    return summarise_latency(size, samples);
}

int session::run_server()
{
    wait([&] { return !conns_.empty(); }, "a client to connect");
    const ctrl_msg h = wait_ctrl("the client's hello");
    if (h.type != ctrl_type::hello) {
        throw std::runtime_error("protocol: expected hello");
    }
    if (test_kind(h.test) != o_.test) {
        throw std::runtime_error(std::string("the client runs ") + test_name(test_kind(h.test)) +
                                 ", this server " + test_name(o_.test) +
                                 " (run the same test on both sides)");
    }
    o_.qps = h.qps.host();
    remote_va_ = h.va.host();
    remote_rkey_ = h.rkey.host();
    alloc_region(h.region_len.host());
    if (o_.test == test_kind::read_bw) {
        std::memcpy(data_.data(), pattern_.data(), data_.size());
    }
    wait([&] { return conns_.size() >= o_.qps; }, "all connections of the client");
    ctrl_msg r{};
    r.magic = wire::be32_t::from_host(k_ctrl_magic);
    r.type = ctrl_type::hello_reply;
    r.va = wire::be64_t::from_host(data_mr_.va);
    r.rkey = wire::be32_t::from_host(data_mr_.rkey);
    send_ctrl(r);

    print_header(o_, info_);
    address_line remote{};
    remote.conn = ep_.inspect(conns_[0]) ? ep_.inspect(conns_[0])->peer_conn : 0;
    remote.rkey = remote_rkey_;
    remote.va = remote_va_;
    remote.ip = remote_ip_;
    print_addresses(address_of(ep_, conns_[0], data_mr_, w_.node()), remote);
    if (o_.is_bw()) {
        print_bw_title(o_);
    } else {
        print_lat_title();
    }
    std::vector<bw_result> bw_rows;
    std::vector<lat_result> lat_rows;
    uint64_t bad_total = 0;
    for (;;) {
        const ctrl_msg m = wait_ctrl("the client's next step");
        if (m.type == ctrl_type::bye) {
            break;
        }
        if (m.type != ctrl_type::start) {
            throw std::runtime_error("protocol: expected start or bye");
        }
        server_size(m);
        const ctrl_msg d = wait_ctrl("the client's results");
        if (d.type != ctrl_type::done) {
            throw std::runtime_error("protocol: expected done");
        }
        const uint64_t iters = d.iters.host();
        ctrl_msg v{};
        v.magic = wire::be32_t::from_host(k_ctrl_magic);
        v.type = ctrl_type::verdict;
        uint64_t bad = 0;
        uint32_t state = 2;
        if (o_.verify) {
            switch (o_.test) {
            case test_kind::write_bw:
            case test_kind::send_bw:
                bad = verify_region(0, std::min<uint64_t>(iters, slots_) * size_, 0);
                state = bad == 0 ? 0 : 1;
                break;
            case test_kind::write_lat:
            case test_kind::send_lat:
                bad = verify_region(0, size_ - 1, 0);
                state = bad == 0 ? 0 : 1;
                break;
            case test_kind::read_bw: break;
            }
        }
        if (bad_length_ != 0) {
            bad += bad_length_;
            state = 1;
        }
        bad_total += bad;
        v.slots = wire::be32_t::from_host(state);
        v.a = wire::be64_t::from_host(bad);
        send_ctrl(v);
        mode_ = mode::idle;
        if (o_.is_bw()) {
            bw_result row;
            row.bytes = size_;
            row.iters = iters;
            row.seconds = double(d.b.host()) / 1e9;
            const double bps = row.seconds > 0 ? double(size_) * double(iters) / row.seconds : 0;
            row.avg = to_unit(o_, bps);
            row.peak = std::bit_cast<double>(d.a.host());
            row.msg_rate_mpps = row.seconds > 0 ? double(iters) / row.seconds / 1e6 : 0;
            bw_rows.push_back(row);
            print_bw_row(row);
        } else {
            lat_result row;
            row.bytes = size_;
            row.iters = iters;
            lat_rows.push_back(row);
        }
    }
    print_dashes();
    if (o_.verify && o_.test != test_kind::read_bw) {
        std::printf(" Data verification: %s\n", bad_total == 0 ? "ok" : "FAILED");
    }
    std::fflush(stdout);
    if (!o_.out_json.empty() &&
        !write_json(o_.out_json, o_, info_, bw_rows, lat_rows, o_.verify && bad_total == 0,
                    !o_.verify ? "skipped" : bad_total == 0 ? "ok" : "FAILED")) {
        return 1;
    }
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
    // The client tears down first; leave only once its memif/link is gone, so
    // the PMD's disconnect handling never races our own port close.
    const uint64_t link_until = clk_.now_ns() + 2'000'000'000ull;
    while (clk_.now_ns() < link_until && info_.link_up && info_.link_up()) {
        step();
    }
    return bad_total == 0 ? 0 : 2;
}

void session::server_size(const ctrl_msg& start)
{
    size_ = start.size.host();
    slots_ = std::max<uint32_t>(1, start.slots.host());
    target_iters_ = start.iters.host();
    if (size_ == 0 || uint64_t(slots_) * size_ > data_.size()) {
        throw std::runtime_error("protocol: size " + std::to_string(size_) +
                                 " does not fit the buffer");
    }
    bad_length_ = 0;
    const size_t q = conns_.size();
    posted_.assign(q, 0);
    completed_.assign(q, 0);
    recv_posted_.assign(q, 0);
    recv_done_.assign(q, 0);
    lat_next_ = 0;
    switch (o_.test) {
    case test_kind::write_bw:
    case test_kind::send_bw:
        std::memset(data_.data(), 0, uint64_t(slots_) * size_);
        mode_ = o_.test == test_kind::send_bw ? mode::send_server : mode::idle;
        if (o_.test == test_kind::send_bw) {
            post_data_recvs(size_);
        }
        break;
    case test_kind::read_bw: mode_ = mode::idle; break;
    case test_kind::write_lat:
        std::memset(data_.data(), 0, size_);
        mode_ = mode::write_lat_server;
        break;
    case test_kind::send_lat:
        std::memset(data_.data(), 0, size_);
        mode_ = mode::send_lat_server;
        slots_ = 1;
        post_data_recvs(size_);
        break;
    }
    ctrl_msg r{};
    r.magic = wire::be32_t::from_host(k_ctrl_magic);
    r.type = ctrl_type::ready;
    send_ctrl(r);
}

} // namespace metaroce::perf
