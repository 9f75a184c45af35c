// The in-process two-endpoint world of the endpoint fuzzer (see fuzz_world.hpp).
#include "fuzz_world.hpp"

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/endpoint_loop.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::fuzz {

namespace {

// A due timer must be cleared within this many on_timer() calls at the same time.
constexpr int k_timer_rounds = 8;
// Packets one poll_tx() loop may produce at one instant without input: far above any
// window (conn_cwnd_max) plus queued ACKs and replies; more means a livelock.
constexpr size_t k_max_burst = 20000;
constexpr size_t k_max_recorded = 512;
// Packets the wire holds; beyond it a send is lost, as at a full switch queue. Keeps an
// execution cheap when time passes without delivery (plane probes go out every 200 us).
constexpr size_t k_max_wire = 256;
// Events of one run()/advance(): beyond this we stop (time may still be short of the
// target); real hangs inside a call are libFuzzer's -timeout.
constexpr int k_max_steps = 20000;

} // namespace

void fail(const char* fmt, ...)
{
    std::fprintf(stderr, "\n*** fuzz invariant violated: ");
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    std::abort();
}

endpoint_config fuzz_config(int side)
{
    endpoint_config c;
    c.local_addr = k_addr[side];
    c.max_connections = 4;
    c.cq_depth = 16;
    c.max_mrs = 16;
    c.seed = 0x5eed0000ull + uint64_t(side);
    // One side hands out receiver rate hints, so the other paces.
    c.inbound_capacity_mbps = side == 1 ? 100000 : 0;
    transport_config& t = c.transport;
    t.mtu = 256;
    t.paths = 4;
    t.planes = 2;
    t.max_streams = 3;
    t.max_msgs = 8;
    t.rq_depth = 4;
    t.max_reads = 2;
    t.connect_retries = 4;
    t.rnr_retries = 3;
    t.max_timeouts = 4;
    t.fail_silence_ns = 2'000'000;
    return c;
}

world::world()
{
    for (int s = 0; s < 2; ++s) {
        ep_[s] = std::make_unique<endpoint>(fuzz_config(s));
        mem_[s] = std::make_unique<side_memory>(*ep_[s], s);
    }
    conn0_[0] = ep_[0]->connect(k_addr[1], now_);
    const bool up = settle(20'000'000, [&] {
        auto a = ep_[0]->inspect(conn0_[0]);
        return a && a->state == conn_state::established && !ep_[1]->connections().empty();
    });
    if (!up) {
        fail("setup: the handshake did not complete");
    }
    conn0_[1] = ep_[1]->connections().front();
    setup_transfer();
    post_outstanding();
}

world::~world() = default;

conn_id world::conn(int s) const
{
    return ep_[s]->inspect(conn0_[s]) ? conn0_[s] : k_no_conn;
}

void world::pump()
{
    for (int s = 0; s < 2; ++s) {
        std::array<conn_event, 16> ev;
        while (ep_[s]->poll_events(ev) > 0) {
        } // drained as a driver does; connections() tells what exists
        std::array<uint8_t, 4096> buf;
        io::span_io out{std::span(buf), [&](const tx_frame& f) {
            if (f.len == 0 || f.len > buf.size()) {
                fail("side %d: poll_tx() returned true with length %zu", s, f.len);
            }
            check_read_resp(s, std::span(buf).first(f.len));
            if (f.dst_addr != k_addr[1 - s]) {
                return io::tx_next::more; // a reply to a spoofed source: it leaves our two-node fabric
            }
            wire_pkt p;
            p.deliver_at = now_ + k_wire_delay_ns;
            p.to = 1 - s;
            p.meta.src_addr = k_addr[s];
            p.meta.plane = f.plane;
            p.meta.udp_sport = f.udp_sport;
            p.bytes.assign(buf.begin(), buf.begin() + ptrdiff_t(f.len));
            if (sent[p.to].size() < k_max_recorded) {
                sent[p.to].push_back(p);
            }
            if (on_send) {
                on_send(p);
            }
            if (wire_.size() < k_max_wire) {
                wire_.push_back(std::move(p));
            }
            return io::tx_next::more;
        }};
        if (io::pull_tx(*ep_[s], out, now_, k_max_burst).why == io::tx_stop::budget) {
            fail("side %d: poll_tx() produced %zu packets at t=%llu without any input", s, k_max_burst,
                 (unsigned long long)now_);
        }
    }
}

// A READ response is built from memory as it is when it goes out: its payload must be
// found, byte for byte, inside a live region of the responder with remote_read. Else
// it read outside the region (guard bytes, a neighbour) or a deregistered one.
void world::check_read_resp(int s, std::span<const uint8_t> bytes)
{
    const wire::parse_result r = wire::parse(bytes);
    if (!r.ok() || r.pkt.op != wire::opcode::read_resp || r.pkt.payload.empty()) {
        return;
    }
    if (!mem_[s]->peer_readable(r.pkt.payload)) {
        fail("side %d: READ response (msn %u, offset %u, %zu bytes) carries bytes from outside every live "
             "region with remote_read",
             s, r.pkt.msn, r.pkt.offset, r.pkt.payload.size());
    }
}

void world::inject(int to, const rx_meta& m, std::span<const uint8_t> bytes)
{
    ep_[to]->on_packet(m, bytes, now_);
}

void world::deliver(size_t n, int mode)
{
    n = std::min(n, wire_.size());
    std::vector<wire_pkt> batch(wire_.begin(), wire_.begin() + ptrdiff_t(n));
    wire_.erase(wire_.begin(), wire_.begin() + ptrdiff_t(n));
    if (mode == 3) {
        std::reverse(batch.begin(), batch.end());
    }
    for (const wire_pkt& p : batch) {
        for (int k = 0; mode != 1 && k < (mode == 2 ? 2 : 1); ++k) {
            inject(p.to, p.meta, p.bytes);
        }
    }
    pump();
}

void world::fire_timers(int s)
{
    for (int i = 0; ep_[s]->next_timer() <= now_; ++i) {
        if (i == k_timer_rounds) {
            fail("side %d: on_timer(%llu) makes no progress: next_timer() stays at %llu", s,
                 (unsigned long long)now_, (unsigned long long)ep_[s]->next_timer());
        }
        ep_[s]->on_timer(now_);
    }
}

void world::advance(uint64_t ns)
{
    const uint64_t end = now_ + ns;
    for (int step = 0; step < k_max_steps; ++step) {
        pump();
        const uint64_t next = std::min(ep_[0]->next_timer(), ep_[1]->next_timer());
        now_ = std::max(now_, std::min(next, end));
        fire_timers(0);
        fire_timers(1);
        if (next >= end) {
            break;
        }
    }
    pump();
}

void world::run(uint64_t ns)
{
    settle(ns, [] { return false; });
}

bool world::settle(uint64_t max_ns, const std::function<bool()>& done)
{
    const uint64_t end = now_ + max_ns;
    for (int step = 0; step < k_max_steps; ++step) {
        pump();
        if (done()) {
            return true;
        }
        bool delivered = false;
        while (!wire_.empty() && wire_.front().deliver_at <= now_) {
            const wire_pkt p = std::move(wire_.front());
            wire_.erase(wire_.begin());
            inject(p.to, p.meta, p.bytes);
            delivered = true;
        }
        if (!delivered) {
            uint64_t next = std::min(ep_[0]->next_timer(), ep_[1]->next_timer());
            if (!wire_.empty()) {
                next = std::min(next, wire_.front().deliver_at);
            }
            if (next > end) {
                now_ = std::max(now_, end);
                fire_timers(0);
                fire_timers(1);
                pump();
                return done();
            }
            now_ = std::max(now_, next);
        }
        fire_timers(0);
        fire_timers(1);
    }
    pump();
    return done();
}

post_result world::post_send(int s, conn_id c, const send_wr& wr)
{
    const post_result r = ep_[s]->post_send(c, wr, now_);
    if (r == post_result::ok) {
        posted_wr p;
        p.conn = c;
        p.stream = wr.stream;
        p.op = wr.op;
        p.signaled = wr.signaled;
        p.length = wr.local.length;
        if (!posted_[s].emplace(wr.wr_id, p).second) {
            fail("harness: wr_id %llu posted twice", (unsigned long long)wr.wr_id);
        }
        if (wr.op == wr_opcode::read) {
            mem_[s]->open_range(wr.wr_id, wr.local.addr, wr.local.length);
        }
    }
    return r;
}

post_result world::post_recv(int s, conn_id c, uint16_t stream, const recv_wr& wr)
{
    const post_result r = ep_[s]->post_recv(c, stream, wr);
    if (r == post_result::ok) {
        posted_wr p;
        p.conn = c;
        p.stream = stream;
        p.recv = true;
        p.length = wr.local.length;
        if (!posted_[s].emplace(wr.wr_id, p).second) {
            fail("harness: wr_id %llu posted twice", (unsigned long long)wr.wr_id);
        }
        mem_[s]->open_range(wr.wr_id, wr.local.addr, wr.local.length);
    }
    return r;
}

std::vector<completion> world::poll_cq(int s, size_t max)
{
    mem_[s]->check("before polling the CQ");
    std::vector<completion> out;
    std::array<completion, 8> wc;
    while (out.size() < max) {
        const size_t n = ep_[s]->poll_cq(std::span(wc).first(std::min(wc.size(), max - out.size())));
        if (n == 0) {
            break;
        }
        for (size_t i = 0; i < n; ++i) {
            const completion& c = wc[i];
            const auto it = posted_[s].find(c.wr_id);
            if (it == posted_[s].end()) {
                fail("side %d: completion for wr_id %llu, which is not outstanding (completed twice or never posted)",
                     s, (unsigned long long)c.wr_id);
            }
            check_completion(s, c, it->second);
            posted_[s].erase(it);
            mem_[s]->close_range(c.wr_id);
            out.push_back(c);
        }
    }
    return out;
}

// What verbs and spec 7.5/9 promise about one completion of side s.
void world::check_completion(int s, const completion& c, const posted_wr& p)
{
    const auto id = (unsigned long long)c.wr_id;
    const bool recv_op = c.op == wc_opcode::recv || c.op == wc_opcode::recv_rdma_with_imm;
    if (recv_op != p.recv) {
        fail("side %d: wr_id %llu completed as the wrong kind of work request", s, id);
    }
    if (c.conn != p.conn || c.stream != p.stream) {
        fail("side %d: wr_id %llu completed on connection %u stream %u, posted on %u stream %u", s, id,
             c.conn, c.stream, p.conn, p.stream);
    }
    // (A WRITE_IMM's byte_len is what it wrote into the region, as in verbs.)
    if (c.op == wc_opcode::recv && c.status == wc_status::success && c.byte_len > p.length) {
        fail("side %d: receive wr_id %llu reports %u bytes into a %u-byte buffer", s, id, c.byte_len, p.length);
    }
    if (!p.recv && !p.signaled && c.status == wc_status::success) {
        fail("side %d: unsignaled wr_id %llu produced a successful completion", s, id);
    }
    // Spec 9.1 and 4.1: sends, and receives, complete in posting order within a stream
    // (an unsignaled send that succeeded never completes, so it does not count).
    for (const auto& [earlier, q] : posted_[s]) {
        if (earlier >= c.wr_id) {
            break;
        }
        if (q.conn == p.conn && q.stream == p.stream && q.recv == p.recv && (q.recv || q.signaled)) {
            fail("side %d: wr_id %llu completed before wr_id %llu, posted earlier on the same stream", s, id,
                 (unsigned long long)earlier);
        }
    }
    // Spec 7.5: after a send request of a stream failed, no later one succeeds.
    if (!p.recv) {
        const auto key = std::make_pair(p.conn, p.stream);
        if (c.status != wc_status::success) {
            failed_[s].insert(key);
        } else if (failed_[s].count(key) != 0) {
            fail("side %d: wr_id %llu succeeded after an earlier request of its stream failed", s, id);
        }
    }
}

void world::check_flushed()
{
    for (int s = 0; s < 2; ++s) {
        poll_cq(s);
        for (const auto& [id, p] : posted_[s]) {
            if (!p.recv && !p.signaled) {
                continue;
            }
            const auto ci = ep_[s]->inspect(p.conn);
            if (!ci || ci->state == conn_state::error || ci->state == conn_state::closing ||
                ci->state == conn_state::closed) {
                fail("side %d: %s wr_id %llu never completed, and its connection %u is %s", s,
                     p.recv ? "receive" : "send", (unsigned long long)id, p.conn,
                     ci ? std::string(to_string(ci->state)).c_str() : "gone");
            }
        }
    }
}

void world::close(int s, conn_id c) { ep_[s]->close(c, now_); }

conn_id world::connect(int s) { return ep_[s]->connect(k_addr[1 - s], now_); }

void world::set_plane(int s, uint8_t plane, bool up) { ep_[s]->set_plane_admin(plane, up, now_); }

bool world::deregister(int s, int region) { return mem_[s]->deregister(region); }

void world::check_memory(const char* when)
{
    mem_[0]->check(when);
    mem_[1]->check(when);
}

// ---- setup -------------------------------------------------------------------

namespace {

struct transfer {
    int side;
    wr_opcode op;
    uint16_t stream;
    uint32_t local_off; // in r_private (READ: destination)
    uint32_t len;
    int remote;         // peer region (WRITE*/READ)
    uint32_t remote_off;
};

} // namespace

// Every kind of message once each way, all of which must succeed: proves the world
// works and gives the mutator real packets of every type.
void world::setup_transfer()
{
    const transfer xfers[] = {
        {0, wr_opcode::write, 0, 0, 600, r_rw, 0},
        {0, wr_opcode::write_imm, 1, 600, 100, r_wo, 100},
        {0, wr_opcode::send, 2, 700, 150, 0, 0},
        {0, wr_opcode::send_imm, 0, 850, 0, 0, 0},
        {0, wr_opcode::read, 1, 1000, 500, r_ro, 0},
        {1, wr_opcode::write, 0, 0, 300, r_rw, 200},
        {1, wr_opcode::read, 2, 1000, 400, r_rw, 0},
        {1, wr_opcode::send, 1, 300, 100, 0, 0},
    };
    // Receives the messages above consume: (side, stream, buffer).
    const int recvs[][3] = {{1, 1, 0}, {1, 2, 1}, {1, 0, 2}, {0, 1, 0}};
    for (const auto& r : recvs) {
        recv_wr w;
        w.wr_id = next_wr_id();
        w.local = {mem_[r[0]]->recv_va(r[2]), mem_[r[0]]->recv_len(), mem_[r[0]]->region(r_recv).lkey};
        if (post_recv(r[0], conn0_[r[0]], uint16_t(r[1]), w) != post_result::ok) {
            fail("setup: post_recv failed");
        }
    }
    for (const transfer& x : xfers) {
        const side_memory& me = *mem_[x.side];
        const side_memory& peer = *mem_[1 - x.side];
        send_wr w;
        w.wr_id = next_wr_id();
        w.op = x.op;
        w.stream = x.stream;
        w.local = {me.region(r_private).va + x.local_off, x.len, me.region(r_private).lkey};
        w.remote_va = peer.region(x.remote).va + x.remote_off;
        w.rkey = peer.region(x.remote).rkey;
        w.imm = 0xabc00000u + uint32_t(w.wr_id);
        const post_result r = post_send(x.side, conn0_[x.side], w);
        if (r != post_result::ok) {
            fail("setup: post_send failed: %s", std::string(to_string(r)).c_str());
        }
    }
    const bool done = settle(20'000'000, [&] {
        for (int s = 0; s < 2; ++s) {
            for (const completion& c : poll_cq(s)) {
                if (c.status != wc_status::success) {
                    fail("setup: wr_id %llu failed: %s", (unsigned long long)c.wr_id,
                         std::string(to_string(c.status)).c_str());
                }
            }
        }
        return posted_[0].empty() && posted_[1].empty();
    });
    if (!done) {
        fail("setup: the warm-up transfer did not complete");
    }
    check_memory("setup");
}

// Receives posted and READs and WRITEs in flight, their first packets on the wire.
void world::post_outstanding()
{
    const int recvs[][3] = {{0, 0, 1}, {0, 2, 2}, {0, 1, 6}, {1, 0, 3}, {1, 1, 4}, {1, 2, 5}};
    for (const auto& r : recvs) {
        recv_wr w;
        w.wr_id = next_wr_id();
        w.local = {mem_[r[0]]->recv_va(r[2]), mem_[r[0]]->recv_len(), mem_[r[0]]->region(r_recv).lkey};
        if (post_recv(r[0], conn0_[r[0]], uint16_t(r[1]), w) != post_result::ok) {
            fail("setup: post_recv failed");
        }
    }
    const transfer xfers[] = {
        {0, wr_opcode::write, 0, 0, 900, r_rw, 100},
        {0, wr_opcode::read, 1, 1000, 500, r_ro, 10},
        {0, wr_opcode::send, 2, 0, 120, 0, 0},
        {1, wr_opcode::write_imm, 1, 0, 200, r_wo, 0},
        {1, wr_opcode::read, 0, 1000, 300, r_rw, 0},
        {1, wr_opcode::write, 2, 0, 500, r_rw, 500},
    };
    for (const transfer& x : xfers) {
        const side_memory& me = *mem_[x.side];
        const side_memory& peer = *mem_[1 - x.side];
        send_wr w;
        w.wr_id = next_wr_id();
        w.op = x.op;
        w.stream = x.stream;
        w.local = {me.region(r_private).va + x.local_off, x.len, me.region(r_private).lkey};
        w.remote_va = peer.region(x.remote).va + x.remote_off;
        w.rkey = peer.region(x.remote).rkey;
        w.imm = 0xdef00000u + uint32_t(w.wr_id);
        if (post_send(x.side, conn0_[x.side], w) != post_result::ok) {
            fail("setup: post_send of outstanding work failed");
        }
    }
    pump();
}

} // namespace metaroce::fuzz
