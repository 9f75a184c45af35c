#include "core_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/endpoint_loop.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::bench {

namespace {

constexpr uint32_t k_addr_a = 0x0a000001;
constexpr uint32_t k_addr_b = 0x0a000002;
constexpr size_t k_src_max = 4u << 20;
constexpr uint32_t k_access = access::local_write | access::remote_write | access::remote_read;

endpoint_config config_for(uint32_t addr, uint16_t paths, uint64_t seed)
{
    endpoint_config c;
    c.local_addr = addr;
    c.seed = seed;
    c.max_connections = 4;
    c.transport.paths = paths;
    return c;
}

// The receiver of a packet sees the sender's route fields as the driver would.
rx_meta meta_from(uint32_t src, const tx_frame& f)
{
    rx_meta m;
    m.src_addr = src;
    m.plane = f.plane;
    m.udp_sport = f.udp_sport;
    return m;
}

} // namespace

core_bench::core_bench(const core_bench_options& o)
    : opt_(o), a_(std::make_unique<endpoint>(config_for(k_addr_a, o.paths, 11))),
      b_(std::make_unique<endpoint>(config_for(k_addr_b, o.paths, 22))),
      src_(std::min<uint64_t>(o.bytes, k_src_max)), dst_(o.bytes),
      buf_a_(wire::max_packet_len(9000)), buf_b_(wire::max_packet_len(9000))
{
    opt_.msg_bytes = uint32_t(std::min<uint64_t>(opt_.msg_bytes, std::max<size_t>(src_.size(), 1)));
    // A pattern that differs between messages' offsets and between bytes of a packet.
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint8_t& v : src_) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v = uint8_t(x);
    }
    if (!src_.empty()) {
        src_mr_ = *a_->memory().register_region(src_.data(), src_.size(), k_access);
    }
    if (!dst_.empty()) {
        dst_mr_ = *b_->memory().register_region(dst_.data(), dst_.size(), k_access);
    }
}

core_bench::~core_bench() = default;

__attribute__((noinline)) size_t core_bench::pump_data()
{
    io::span_io out{std::span(buf_a_), [this](const tx_frame& f) {
                        b_->on_packet(meta_from(k_addr_a, f), f.buf.first(f.len), now_);
                        return io::tx_next::more;
                    }};
    return io::pull_tx(*a_, out, now_, opt_.round_budget).pulled;
}

__attribute__((noinline)) size_t core_bench::pump_acks()
{
    io::span_io out{std::span(buf_b_), [this](const tx_frame& f) {
                        a_->on_packet(meta_from(k_addr_b, f), f.buf.first(f.len), now_);
                        return io::tx_next::more;
                    }};
    return io::pull_tx(*b_, out, now_).pulled;
}

void core_bench::handshake_round()
{
    pump_data();
    pump_acks();
    io::run_due_timers(*a_, now_);
    io::run_due_timers(*b_, now_);
    now_ += opt_.round_ns;
}

bool core_bench::connect()
{
    conn_ = a_->connect(k_addr_b, now_);
    for (int i = 0; i < 1000 && conn_ != k_no_conn; ++i) {
        handshake_round();
        const auto info = a_->inspect(conn_);
        if (info && info->state == conn_state::established) {
            conn_event ev[8];
            while (a_->poll_events(ev) > 0 || b_->poll_events(ev) > 0) {
            }
            return true;
        }
    }
    return false;
}

__attribute__((noinline)) core_bench_result core_bench::transfer()
{
    core_bench_result r;
    const counters a0 = a_->stats();
    const counters b0 = b_->stats();
    const uint64_t start_fake = now_;
    const auto start = std::chrono::steady_clock::now();
    uint64_t posted = 0;    // bytes
    uint32_t outstanding = 0;
    uint64_t next_id = 1;
    completion wc[64];
    // Stop when nothing has completed for this much fake time: a stuck transfer fails.
    const uint64_t k_stall_ns = 1'000'000'000;
    uint64_t last_progress = now_;
    while (posted < opt_.bytes || outstanding > 0) {
        while (posted < opt_.bytes && outstanding < opt_.max_outstanding) {
            const uint32_t len = uint32_t(std::min<uint64_t>(opt_.msg_bytes, opt_.bytes - posted));
            send_wr wr;
            wr.wr_id = next_id++;
            wr.op = wr_opcode::write;
            wr.local = {src_mr_.va + posted % src_.size(), len, src_mr_.lkey};
            wr.remote_va = dst_mr_.va + posted;
            wr.rkey = dst_mr_.rkey;
            if (a_->post_send(conn_, wr, now_) != post_result::ok) {
                r.error = "post_send refused";
                return r;
            }
            posted += len;
            ++outstanding;
        }
        pump_data();
        pump_acks();
        io::run_due_timers(*a_, now_);
        io::run_due_timers(*b_, now_);
        for (size_t n; (n = a_->poll_cq(wc)) > 0;) {
            for (size_t i = 0; i < n; ++i) {
                if (wc[i].status != wc_status::success) {
                    r.error = "a WRITE completed in error";
                    return r;
                }
            }
            outstanding -= uint32_t(n);
            r.completions += n;
            last_progress = now_;
        }
        if (now_ - last_progress > k_stall_ns) {
            r.error = "no completion for a second of fake time";
            return r;
        }
        now_ += opt_.round_ns;
    }
    r.wall_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count());
    r.fake_ns = now_ - start_fake;
    r.data_packets = a_->stats().tx_data_packets - a0.tx_data_packets;
    r.acks = b_->stats().tx_acks - b0.tx_acks;
    r.retransmits = a_->stats().retransmits - a0.retransmits;
    r.ok = true;
    return r;
}

__attribute__((noinline)) core_bench_result core_bench::ping_pong()
{
    core_bench_result r;
    const uint32_t n = opt_.ping_bytes;
    // The ping goes from the start of the sender's buffer, lands at the start of the
    // receiver's and is echoed from there into the sender's buffer past the ping.
    if (n == 0 || 2 * uint64_t(n) > src_.size() || n > dst_.size()) {
        r.error = "--bytes too small for the ping size";
        return r;
    }
    const auto recv_into = [](endpoint& ep, conn_id c, const memory_region& m, uint64_t off, uint32_t len) {
        recv_wr w;
        w.local = {m.va + off, len, m.lkey};
        return ep.post_recv(c, 0, w) == post_result::ok;
    };
    const auto send_from = [this](endpoint& ep, conn_id c, const memory_region& m, uint32_t len) {
        send_wr w;
        w.op = wr_opcode::send;
        w.local = {m.va, len, m.lkey};
        return ep.post_send(c, w, now_) == post_result::ok;
    };
    const std::vector<conn_id> b_conns = b_->connections();
    if (b_conns.empty()) {
        r.error = "the receiver has no connection";
        return r;
    }
    const conn_id back = b_conns[0];
    const counters a0 = a_->stats();
    const counters b0 = b_->stats();
    const auto start = std::chrono::steady_clock::now();
    completion wc[16];
    // Drains a side's completions, false at one in error; counts its receives.
    const auto take = [&wc](endpoint& ep, uint32_t& recvs) {
        for (size_t k; (k = ep.poll_cq(wc)) > 0;) {
            for (size_t i = 0; i < k; ++i) {
                if (wc[i].status != wc_status::success) {
                    return false;
                }
                recvs += wc[i].op == wc_opcode::recv;
            }
        }
        return true;
    };
    for (uint32_t i = 0; i < opt_.pings; ++i) {
        src_[i % n] = uint8_t(src_[i % n] + 1); // every ping differs from the last
        if (!recv_into(*a_, conn_, src_mr_, n, n) || !recv_into(*b_, back, dst_mr_, 0, n) ||
            !send_from(*a_, conn_, src_mr_, n)) {
            r.error = "a post was refused";
            return r;
        }
        uint32_t echoed = 0;
        for (int step = 0; echoed == 0; ++step) {
            if (step == 1000) {
                r.error = "no echo after 1000 steps";
                return r;
            }
            pump_data();
            uint32_t pinged = 0;
            if (!take(*b_, pinged)) {
                r.error = "a receiver completion in error";
                return r;
            }
            if (pinged != 0 && !send_from(*b_, back, dst_mr_, n)) {
                r.error = "the echo was refused";
                return r;
            }
            pump_acks();
            if (!take(*a_, echoed)) {
                r.error = "a sender completion in error";
                return r;
            }
            io::run_due_timers(*a_, now_);
            io::run_due_timers(*b_, now_);
            now_ += opt_.round_ns;
        }
        if (std::memcmp(src_.data(), src_.data() + n, n) != 0) {
            r.error = "an echo differs from its ping";
            return r;
        }
        ++r.round_trips;
    }
    r.wall_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count());
    r.data_packets = (a_->stats().tx_data_packets - a0.tx_data_packets) +
                     (b_->stats().tx_data_packets - b0.tx_data_packets);
    r.acks = (a_->stats().tx_acks - a0.tx_acks) + (b_->stats().tx_acks - b0.tx_acks);
    r.retransmits = a_->stats().retransmits - a0.retransmits + b_->stats().retransmits - b0.retransmits;
    r.ok = true;
    return r;
}

bool core_bench::verify() const
{
    for (size_t i = 0; i < dst_.size(); ++i) {
        if (dst_[i] != src_[i % src_.size()]) {
            return false;
        }
    }
    return true;
}

} // namespace metaroce::bench
