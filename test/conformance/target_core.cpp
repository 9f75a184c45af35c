// The `core` target: metaroce's sans-I/O endpoint in this process, driven through its
// packet interface (on_packet, poll_tx, on_timer) under a virtual clock. Every test
// gets a fresh endpoint, so timing rules can be checked to the nanosecond.
#include <deque>
#include <map>
#include <memory>

#include "common/endpoint_loop.hpp"
#include "metaroce/endpoint.hpp"
#include "metaroce/wire/codec.hpp"
#include "target.hpp"

namespace metaroce::conformance {

namespace {

// Registered regions sit at peer-visible addresses unrelated to their host memory, so
// a wrong address translation shows.
constexpr uint64_t k_va_base = 0x7e0000000000ull;

class core_target final : public target {
public:
    core_target()
    {
        caps_.virtual_time = true;
        caps_.planes = 2;
        caps_.counters = true;
        caps_.rate_hints = true;
        caps_.plane_admin = true;
        caps_.sge_lists = true;
        begin_test();
    }

    std::string name() const override { return "core"; }
    const target_caps& caps() const override { return caps_; }

    void begin_test() override
    {
        endpoint_config c;
        c.local_addr = k_iut_addr;
        c.seed = 0x5eed0001 + ++tests_;
        c.transport.planes = caps_.planes;
        // As a driver would from its link speeds (spec 6.4): 100 Gb/s inbound.
        c.inbound_capacity_mbps = 100'000;
        // The window tests count a first round of conn_cwnd_init packets (spec 6.1 with
        // conn_cwnd_first = conn_cwnd_init); the default blind window of 1 is covered by
        // the unit and model tests.
        c.transport.cc.conn_cwnd_first = c.transport.cc.conn_cwnd_init;
        ep_ = std::make_unique<endpoint>(c);
        out_.clear();
        mem_.clear();
        now_ = 1'000'000'000; // 1 s: clear of zero so "time 0" bugs show
    }

    void send(const datagram& d) override
    {
        rx_meta m;
        m.src_addr = d.src_addr;
        m.plane = d.plane;
        m.udp_sport = d.udp_sport;
        m.ce = d.ce;
        ep_->on_packet(m, d.bytes, now_);
    }

    bool recv(datagram& out, uint64_t timeout_ns) override
    {
        const uint64_t deadline = now_ + timeout_ns;
        for (;;) {
            drain_tx();
            if (!out_.empty()) {
                out = std::move(out_.front());
                out_.pop_front();
                return true;
            }
            const uint64_t next = ep_->next_timer();
            if (next > deadline) {
                now_ = deadline;
                return false;
            }
            now_ = std::max(now_, next);
            ep_->on_timer(now_);
        }
    }

    uint64_t now_ns() override { return now_; }

    std::optional<region> reg_mr(uint64_t len, uint32_t access) override
    {
        auto buf = std::make_unique<uint8_t[]>(len);
        std::fill(buf.get(), buf.get() + len, uint8_t(0));
        const uint64_t va = k_va_base + uint64_t(mem_.size()) * (1ull << 32);
        const auto mr = ep_->memory().register_region(buf.get(), va, len, access);
        if (!mr) {
            return std::nullopt;
        }
        mem_[mr->lkey] = std::move(buf);
        return region{mr->va, mr->length, mr->lkey, mr->rkey};
    }

    bool dereg_mr(const region& r) override { return ep_->memory().deregister(r.lkey); }

    bool write_mem(const region& r, uint64_t off, std::span<const uint8_t> bytes) override
    {
        auto it = mem_.find(r.lkey);
        if (it == mem_.end() || off + bytes.size() > r.len) {
            return false;
        }
        std::copy(bytes.begin(), bytes.end(), it->second.get() + off);
        return true;
    }

    std::vector<uint8_t> read_mem(const region& r, uint64_t off, uint64_t len) override
    {
        auto it = mem_.find(r.lkey);
        if (it == mem_.end() || off + len > r.len) {
            return {};
        }
        return {it->second.get() + off, it->second.get() + off + len};
    }

    post_result post_recv(conn_id c, uint16_t stream, const region& r, uint64_t off, uint32_t len,
                          uint64_t wr_id) override
    {
        recv_wr wr;
        wr.wr_id = wr_id;
        wr.local = sge{r.va + off, len, r.lkey};
        return ep_->post_recv(c, stream, wr);
    }

    post_result post_recv_list(conn_id c, uint16_t stream, std::span<const sge> pieces, uint64_t wr_id) override
    {
        recv_wr wr;
        wr.wr_id = wr_id;
        wr.sg_list = pieces.data();
        wr.num_sge = uint32_t(pieces.size());
        return ep_->post_recv(c, stream, wr);
    }

    post_result post_send(conn_id c, const send_req& s) override
    {
        send_wr wr;
        wr.wr_id = s.wr_id;
        wr.op = s.op;
        wr.stream = s.stream;
        wr.local = sge{s.local.va + s.offset, s.length, s.local.lkey};
        wr.remote_va = s.remote_va;
        wr.rkey = s.rkey;
        wr.imm = s.imm;
        wr.signaled = s.signaled;
        return ep_->post_send(c, wr, now_);
    }

    std::vector<completion> poll_cq() override
    {
        std::vector<completion> all;
        completion buf[64];
        for (size_t n; (n = ep_->poll_cq(buf)) > 0;) {
            all.insert(all.end(), buf, buf + n);
        }
        conn_event ev[64];
        while (ep_->poll_events(ev) > 0) {
        }
        return all;
    }

    conn_id connect(uint32_t peer) override { return ep_->connect(peer, now_); }
    void close(conn_id c) override { ep_->close(c, now_); }

    std::optional<conn_state> state(conn_id c) override
    {
        const auto i = ep_->inspect(c);
        if (!i) {
            return std::nullopt;
        }
        return i->state;
    }

    std::optional<uint64_t> counter(std::string_view name) override
    {
        const counters& s = ep_->stats();
        const std::map<std::string_view, uint64_t> known = {
            {"rx_duplicates", s.rx_duplicates},     {"rx_beyond_window", s.rx_beyond_window},
            {"rx_unknown_conn", s.rx_unknown_conn}, {"rx_wrong_peer", s.rx_wrong_peer},
            {"rx_bad_path", s.rx_bad_path},         {"rx_invalid", s.rx_invalid},
            {"rx_stale_ack", s.rx_stale_ack},       {"rx_rnr", s.rx_rnr},
            {"rx_access_errors", s.rx_access_errors}, {"rx_malformed", s.rx_malformed_total()},
            {"cookies_sent", s.cookies_sent},       {"rx_bad_cookie", s.rx_bad_cookie},
            {"rx_bad_token", s.rx_bad_token},       {"rx_ce", s.rx_ce},
            {"rx_hint_floored", s.rx_hint_floored}, {"rx_bad_shape", s.rx_bad_shape},
            {"keepalives", s.keepalives},           {"conns_expired", s.conns_expired},
            {"conns_reaped", s.conns_reaped},
        };
        if (auto it = known.find(name); it != known.end()) {
            return it->second;
        }
        for (size_t i = 1; i < size_t(wire::parse_error::count_); ++i) {
            if (name == "rx_malformed." + std::string(wire::to_string(wire::parse_error(i)))) {
                return s.rx_malformed[i];
            }
        }
        return std::nullopt;
    }

    bool set_plane(uint8_t plane, bool up) override
    {
        ep_->set_plane_admin(plane, up, now_);
        return true;
    }

private:
    void drain_tx()
    {
        io::span_io out{std::span(tx_buf_), [&](const tx_frame& f) {
            datagram d;
            d.bytes.assign(f.buf.begin(), f.buf.begin() + ptrdiff_t(f.len));
            d.src_addr = k_iut_addr;
            d.dst_addr = f.dst_addr;
            d.plane = f.plane;
            d.udp_sport = f.udp_sport;
            d.ect = f.ect;
            d.at_ns = now_;
            out_.push_back(std::move(d));
            return io::tx_next::more;
        }};
        io::pull_tx(*ep_, out, now_);
    }

    target_caps caps_;
    std::unique_ptr<endpoint> ep_;
    std::deque<datagram> out_;
    std::vector<uint8_t> tx_buf_ = std::vector<uint8_t>(wire::max_packet_len(9000));
    std::map<uint32_t, std::unique_ptr<uint8_t[]>> mem_;
    uint64_t now_ = 0;
    uint32_t tests_ = 0;
};

} // namespace

std::unique_ptr<target> make_core_target()
{
    return std::make_unique<core_target>();
}

} // namespace metaroce::conformance
