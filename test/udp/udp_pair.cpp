// Two processes over the UDP backend: the client WRITEs --bytes to the server in
// WRITE_IMM messages and reports the throughput; the server checks every message's
// bytes as it lands and returns credits (slots it has checked) by SEND, so the
// client never overwrites a slot before it was checked.
//
//   udp_pair server --local 127.0.0.2[,127.0.0.4] [--port 4796] --bytes 1G
//   udp_pair client --local 127.0.0.1[,127.0.0.3] --peer 127.0.0.2 --bytes 1G
// (both sides are told the size: the server checks that many messages, then exits).
// Options: --msg BYTES (1 MiB), --depth N (32), --sport-slots N, --gso 0|1, --gro 0|1, --tx-budget N, --drop RATE
// (receive loss, test-only), --min-rto-us, --delay-mark-us, --timeout S (60).
// Exit 0 only if every byte arrived intact.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "udp/node.hpp"

using namespace metaroce;
using namespace metaroce::udp;

namespace {

constexpr uint32_t k_slots = 64;     // server slots, one message each
constexpr uint32_t k_src_seeds = 61; // source patterns: coprime with k_slots, so a slot's
                                     // consecutive contents differ
constexpr uint32_t k_credit_every = 8;
constexpr uint32_t k_cells = 64;     // small SEND/RECV buffers per side

struct options {
    std::string role;
    std::vector<uint32_t> local;
    uint32_t peer = 0;
    uint16_t port = 4796;
    uint64_t bytes = 64 << 20;
    uint32_t msg = 1 << 20;
    uint32_t depth = 32;
    uint16_t sport_slots = 0;
    double drop = 0;
    double timeout_s = 60;
    uint64_t min_rto_us = 0; // 0: the backend's default
    uint64_t delay_mark_us = 0;
    bool gso = true;
    bool gro = true;
    uint16_t tx_budget = 0;
};

// What the server SENDs: its slots first, then credits.
struct ctrl {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t msg = 0;
    uint64_t checked = 0;   // messages checked so far
    uint64_t bad_bytes = 0; // of those, bytes that differ
};

uint8_t pattern_byte(uint64_t i, uint32_t seed)
{
    return uint8_t((i * 131 + seed * 7 + 1) ^ (i >> 9) ^ (i >> 17));
}

uint64_t parse_size(const char* s)
{
    char* end = nullptr;
    double v = std::strtod(s, &end);
    switch (end != nullptr ? *end : 0) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return uint64_t(v);
}

std::vector<uint32_t> parse_addrs(const std::string& s)
{
    std::vector<uint32_t> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = s.find(',', start);
        const std::string one = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        out.push_back(parse_ipv4(one.c_str()));
        if (comma == std::string::npos) {
            break;
        }
        start = comma + 1;
    }
    return out;
}

options parse(int argc, char** argv)
{
    options o;
    if (argc < 2) {
        throw std::runtime_error("usage: udp_pair server|client --local A[,B] [--peer P] [...]");
    }
    o.role = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        if (i + 1 >= argc) {
            throw std::runtime_error("missing value after " + k);
        }
        const char* v = argv[++i];
        if (k == "--local") o.local = parse_addrs(v);
        else if (k == "--peer") o.peer = parse_ipv4(v);
        else if (k == "--port") o.port = uint16_t(std::atoi(v));
        else if (k == "--bytes") o.bytes = parse_size(v);
        else if (k == "--msg") o.msg = uint32_t(parse_size(v));
        else if (k == "--depth") o.depth = uint32_t(std::atoi(v));
        else if (k == "--sport-slots") o.sport_slots = uint16_t(std::atoi(v));
        else if (k == "--drop") o.drop = std::atof(v);
        else if (k == "--timeout") o.timeout_s = std::atof(v);
        else if (k == "--min-rto-us") o.min_rto_us = uint64_t(std::atoll(v));
        else if (k == "--delay-mark-us") o.delay_mark_us = uint64_t(std::atoll(v));
        else if (k == "--gso") o.gso = std::atoi(v) != 0;
        else if (k == "--gro") o.gro = std::atoi(v) != 0;
        else if (k == "--tx-budget") o.tx_budget = uint16_t(std::atoi(v));
        else throw std::runtime_error("unknown option " + k);
    }
    if (o.local.empty() || (o.role == "client" && o.peer == 0) || (o.role != "client" && o.role != "server")) {
        throw std::runtime_error("need server|client, --local, and --peer for the client");
    }
    if (o.msg == 0 || o.depth == 0 || o.depth > k_slots) {
        throw std::runtime_error("--msg must be > 0 and --depth 1..64");
    }
    return o;
}

node_params make_params(const options& o)
{
    node_params p;
    p.plane_addrs = o.local;
    p.port = o.port;
    p.test_drop_rate = o.drop;
    p.test_drop_seed = o.local[0];
    if (o.min_rto_us != 0) {
        p.transport.min_rto_ns = o.min_rto_us * 1000;
    }
    if (o.delay_mark_us != 0) {
        p.transport.cc.delay_mark_ns = o.delay_mark_us * 1000;
    }
    p.gso = o.gso;
    p.gro = o.gro;
    if (o.tx_budget != 0) {
        p.tx_budget = o.tx_budget;
    }
    if (o.sport_slots != 0) {
        p.sport_slots = o.sport_slots;
    }
    return p;
}

class side {
public:
    explicit side(const options& o) : n_(make_params(o)), cells_(k_cells)
    {
        cells_mr_ = *n_.ep().memory().register_region(cells_.data(), cells_.size() * sizeof(ctrl),
                                                       access::local_write);
        deadline_ = node::now_ns() + uint64_t(o.timeout_s * 1e9);
    }
    node& n() { return n_; }

    // Polls until a completion or event arrives; throws at the deadline.
    void step()
    {
        const uint64_t now = node::now_ns();
        if (now > deadline_) {
            throw std::runtime_error("timed out");
        }
        // Busy-poll while work flows, sleep on the sockets once idle for a while.
        if (n_.poll(now)) {
            idle_ = 0;
        } else if (++idle_ > 200) {
            n_.wait(1'000'000);
            idle_ = 0;
        }
    }
    void post_cell_recv(conn_id c, uint32_t cell)
    {
        recv_wr r;
        r.wr_id = cell;
        r.local = sge{cells_mr_.va + cell * sizeof(ctrl), uint32_t(sizeof(ctrl)), cells_mr_.lkey};
        must(n_.ep().post_recv(c, 0, r), "post_recv");
    }
    void send_cell(conn_id c, uint32_t cell, const ctrl& m, uint64_t wr_id)
    {
        cells_[cell] = m;
        send_wr s;
        s.wr_id = wr_id;
        s.op = wr_opcode::send;
        s.local = sge{cells_mr_.va + cell * sizeof(ctrl), uint32_t(sizeof(ctrl)), cells_mr_.lkey};
        must(n_.ep().post_send(c, s, node::now_ns()), "post_send");
    }
    const ctrl& cell(uint32_t i) const { return cells_[i]; }
    static void must(post_result r, const char* what)
    {
        if (r != post_result::ok) {
            throw std::runtime_error(std::string(what) + ": " + std::string(to_string(r)));
        }
    }
    void print_counters(const char* who)
    {
        const udp_counters& c = n_.counters();
        std::printf("%s: rx %" PRIu64 " datagrams in %" PRIu64 " recvmmsg, tx %" PRIu64
                    " datagrams in %" PRIu64 " sendmmsg, kernel drops %" PRIu64
                    ", injected drops %" PRIu64 ", would-block %" PRIu64 ", tx errors %" PRIu64
                    ", GSO sends %" PRIu64 ", GRO runs %" PRIu64
                    ", sport sockets %" PRIu64
                    ", retransmits %" PRIu64 " (timeouts %" PRIu64 ", tail probes %" PRIu64
                    "), duplicates %" PRIu64 "\n",
                    who, c.rx_datagrams, c.rx_syscalls, c.tx_datagrams, c.tx_syscalls,
                    c.rx_kernel_drops, c.rx_injected_drops, c.tx_would_block, c.tx_errors, c.tx_gso_sends, c.rx_gro_runs,
                    c.sport_sockets,
                    n_.ep().stats().retransmits, n_.ep().stats().timeouts,
                    n_.ep().stats().tail_probes, n_.ep().stats().rx_duplicates);
    }

private:
    node n_;
    std::vector<ctrl> cells_;
    memory_region cells_mr_;
    uint64_t deadline_ = 0;
    int idle_ = 0;
};

// The k_src_seeds message contents, as the client sends them.
std::vector<uint8_t> source_patterns(uint32_t msg)
{
    std::vector<uint8_t> v(uint64_t(k_src_seeds) * msg);
    for (uint32_t k = 0; k < k_src_seeds; ++k) {
        for (uint32_t j = 0; j < msg; ++j) {
            v[uint64_t(k) * msg + j] = pattern_byte(j, k);
        }
    }
    return v;
}

int run_server(const options& o)
{
    side s(o);
    const std::vector<uint8_t> expect = source_patterns(o.msg);
    endpoint& ep = s.n().ep();
    std::vector<uint8_t> area(uint64_t(k_slots) * o.msg);
    const memory_region mr = *ep.memory().register_region(area.data(), area.size(),
                                                          access::local_write | access::remote_write);
    std::printf("server: ready\n");
    std::fflush(stdout);
    conn_id c = k_no_conn;
    while (c == k_no_conn) {
        s.step();
        conn_event ev[8];
        for (size_t i = 0, n = ep.poll_events(ev); i < n; ++i) {
            if (ev[i].what == conn_event::kind::established && ev[i].incoming) {
                c = ev[i].conn;
            }
        }
    }
    for (uint32_t i = 0; i < k_slots; ++i) { // one receive per WRITE_IMM in flight
        recv_wr r;
        r.wr_id = 1000 + i;
        r.local = sge{mr.va, 0, mr.lkey}; // WRITE_IMM places no bytes through it
        side::must(ep.post_recv(c, 0, r), "post_recv");
    }
    ctrl hello;
    hello.va = mr.va;
    hello.rkey = mr.rkey;
    hello.msg = o.msg;
    uint32_t next_cell = 0;
    s.send_cell(c, next_cell++ % k_cells, hello, 1);
    const uint64_t total = (o.bytes + o.msg - 1) / o.msg;
    uint64_t checked = 0;
    uint64_t bad = 0;
    uint64_t sends_done = 0;
    uint64_t sends_posted = 1;
    bool peer_gone = false;
    while (!(checked == total && sends_done == sends_posted) && !peer_gone) {
        s.step();
        completion wc[64];
        for (size_t i = 0, n = ep.poll_cq(wc); i < n; ++i) {
            if (wc[i].op == wc_opcode::send && checked == total) {
                ++sends_done; // the last credits: flushed if the client closed first, fine
                continue;
            }
            if (wc[i].status != wc_status::success) {
                s.print_counters("server");
                throw std::runtime_error("server completion: " + std::string(to_string(wc[i].status)));
            }
            if (wc[i].op == wc_opcode::send) {
                ++sends_done;
                continue;
            }
            if (wc[i].op != wc_opcode::recv_rdma_with_imm) {
                continue;
            }
            const uint64_t idx = checked; // WRITE_IMMs complete in order on one stream
            const uint32_t seed = uint32_t(idx % k_src_seeds);
            const uint8_t* p = area.data() + (idx % k_slots) * o.msg;
            const uint32_t len = uint32_t(std::min<uint64_t>(o.msg, o.bytes - idx * o.msg));
            if (wc[i].imm != uint32_t(idx) || wc[i].byte_len != len) {
                throw std::runtime_error("server: message " + std::to_string(idx) + " arrived as imm " +
                                         std::to_string(wc[i].imm) + " with " +
                                         std::to_string(wc[i].byte_len) + " bytes");
            }
            const uint8_t* want = expect.data() + uint64_t(seed) * o.msg;
            if (std::memcmp(p, want, len) != 0) {
                for (uint32_t j = 0; j < len; ++j) {
                    bad += p[j] != want[j];
                }
            }
            ++checked;
            recv_wr r;
            r.wr_id = wc[i].wr_id;
            r.local = sge{mr.va, 0, mr.lkey};
            side::must(ep.post_recv(c, 0, r), "post_recv");
            if (checked % k_credit_every == 0 || checked == total) {
                ctrl credit;
                credit.checked = checked;
                credit.bad_bytes = bad;
                s.send_cell(c, next_cell++ % k_cells, credit, 2);
                ++sends_posted;
            }
        }
        conn_event ev[8];
        for (size_t i = 0, n = ep.poll_events(ev); i < n; ++i) {
            peer_gone |= ev[i].conn == c && ev[i].what != conn_event::kind::established;
        }
    }
    // Let the last ACKs out before the process goes.
    const uint64_t until = node::now_ns() + 20'000'000;
    while (node::now_ns() < until) {
        s.n().poll(node::now_ns());
    }
    std::printf("server: checked %" PRIu64 " of %" PRIu64 " messages, %" PRIu64 " bad bytes\n", checked,
                total, bad);
    s.print_counters("server");
    return checked == total && bad == 0 ? 0 : 1;
}

int run_client(const options& o)
{
    side s(o);
    endpoint& ep = s.n().ep();
    std::vector<uint8_t> src = source_patterns(o.msg);
    const memory_region mr = *ep.memory().register_region(src.data(), src.size(), access::local_write);
    const conn_id c = ep.connect(o.peer, node::now_ns());
    if (c == k_no_conn) {
        throw std::runtime_error("connect refused by the core");
    }
    for (uint32_t i = 0; i < k_cells; ++i) {
        s.post_cell_recv(c, i);
    }
    // The server's slots arrive first.
    ctrl hello;
    bool have_hello = false;
    uint64_t checked = 0;
    uint64_t bad = 0;
    const uint64_t total = (o.bytes + o.msg - 1) / o.msg;
    uint64_t posted = 0;
    uint64_t done = 0;
    uint64_t t0 = 0;
    uint64_t t1 = 0;
    while (done < total || checked < total) {
        s.step();
        completion wc[64];
        for (size_t i = 0, n = ep.poll_cq(wc); i < n; ++i) {
            if (wc[i].status != wc_status::success) {
                s.print_counters("client");
                throw std::runtime_error("client completion: " + std::string(to_string(wc[i].status)));
            }
            if (wc[i].op == wc_opcode::recv) {
                const ctrl& m = s.cell(uint32_t(wc[i].wr_id));
                if (!have_hello) {
                    hello = m;
                    have_hello = true;
                    t0 = node::now_ns();
                } else {
                    checked = std::max(checked, m.checked);
                    bad = m.bad_bytes;
                }
                s.post_cell_recv(c, uint32_t(wc[i].wr_id));
            } else if (wc[i].op == wc_opcode::write) {
                if (++done == total) {
                    t1 = node::now_ns();
                }
            }
        }
        // A slot is free once the server has checked what was in it.
        while (have_hello && posted < total && posted - done < o.depth && posted < checked + k_slots) {
            send_wr w;
            w.wr_id = posted;
            w.op = wr_opcode::write_imm;
            w.imm = uint32_t(posted);
            const uint32_t len = uint32_t(std::min<uint64_t>(o.msg, o.bytes - posted * o.msg));
            w.local = sge{mr.va + (posted % k_src_seeds) * o.msg, len, mr.lkey};
            w.remote_va = hello.va + (posted % k_slots) * o.msg;
            w.rkey = hello.rkey;
            w.signaled = true;
            side::must(ep.post_send(c, w, node::now_ns()), "post_send");
            ++posted;
        }
    }
    const double secs = double(t1 - t0) / 1e9;
    std::printf("client: WRITE %" PRIu64 " bytes in %" PRIu64 " messages of %u over %zu plane(s): "
                "%.3f s, %.2f Gb/s; the server checked %" PRIu64 " messages, %" PRIu64 " bad bytes\n",
                o.bytes, total, o.msg, o.local.size(), secs, double(o.bytes) * 8 / secs / 1e9, checked,
                bad);
    s.print_counters("client");
    // ACK the server's last credit before closing, then let the CLOSE out.
    for (int round = 0; round < 2; ++round) {
        const uint64_t until = node::now_ns() + 20'000'000;
        while (node::now_ns() < until) {
            s.n().poll(node::now_ns());
        }
        if (round == 0) {
            ep.close(c, node::now_ns());
        }
    }
    return bad == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        const options o = parse(argc, argv);
        return o.role == "server" ? run_server(o) : run_client(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "udp_pair: %s\n", e.what());
        return 2;
    }
}
