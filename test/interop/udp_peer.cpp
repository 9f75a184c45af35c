// A node on the kernel-UDP backend that runs the metaroce app's test engines with a
// peer (the DPDK app, or another udp_peer): it serves the peer's runs and drives its
// own, over one connection, with the app's run protocol and data checks.
//
//   udp_peer --local 10.0.0.2[,10.0.1.2] [--connect 10.0.0.1] [--serve N]
//            [--drive write_bw,send_bw,read_bw] [--seconds S] [--msg BYTES] [--depth N]
//            [--mtu N] [--paths N] [--min-rto-us N] [--max-timeouts N] [--await-close 1]
//            [--timeout S]
// Without --connect it waits for the peer to connect. It serves until N runs have
// ended (verdict sent), then drives each test for S seconds, then closes (or, with
// --await-close 1, waits for the peer to close).
// Prints "udp_peer: ready" once its sockets are bound, "udp_peer: serving <test>" when
// it got ready for a run of the peer's, "udp_peer: <test> running" when a run it drives
// may start moving data, and one result line per run. Exit 0 only if every
// run moved data without an error and its bytes were checked and found intact.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer_host.hpp"
#include "udp/node.hpp"

using namespace metaroce;
using namespace metaroce::engines;
using metaroce::interop::peer_host;

namespace {

struct options {
    std::vector<uint32_t> local;
    uint32_t connect = 0;
    uint32_t serve = 0;
    std::vector<test_kind> drive;
    double seconds = 1;
    uint64_t msg = 65536;
    uint32_t depth = 64;
    uint16_t mtu = 1400;
    uint16_t paths = 16;
    uint64_t min_rto_us = 0;
    uint32_t max_timeouts = 20; // as the app's configs: a loaded 2-core host stalls for 100s of ms
    bool await_close = false;
    double timeout_s = 60;
};

std::vector<std::string> split(const std::string& s)
{
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1) {
        out.push_back(s.substr(start, comma - start));
    }
    out.push_back(s.substr(start));
    return out;
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (i + 1 >= argc) {
            throw std::runtime_error("missing value after " + k);
        }
        const std::string v = argv[++i];
        if (k == "--local") {
            for (const std::string& a : split(v)) {
                o.local.push_back(udp::parse_ipv4(a.c_str()));
            }
        } else if (k == "--connect") o.connect = udp::parse_ipv4(v.c_str());
        else if (k == "--serve") o.serve = uint32_t(std::stoul(v));
        else if (k == "--drive") {
            for (const std::string& t : split(v)) {
                const auto kind = parse_test(t);
                if (!kind) {
                    throw std::runtime_error("--drive: unknown test \"" + t + "\"");
                }
                o.drive.push_back(*kind);
            }
        } else if (k == "--seconds") o.seconds = std::stod(v);
        else if (k == "--msg") o.msg = std::stoull(v);
        else if (k == "--depth") o.depth = uint32_t(std::stoul(v));
        else if (k == "--mtu") o.mtu = uint16_t(std::stoul(v));
        else if (k == "--paths") o.paths = uint16_t(std::stoul(v));
        else if (k == "--min-rto-us") o.min_rto_us = std::stoull(v);
        else if (k == "--max-timeouts") o.max_timeouts = uint32_t(std::stoul(v));
        else if (k == "--await-close") o.await_close = v == "1";
        else if (k == "--timeout") o.timeout_s = std::stod(v);
        else throw std::runtime_error("unknown option " + k);
    }
    if (o.local.empty() || o.msg == 0 || o.depth == 0) {
        throw std::runtime_error("need --local A[,B]; --msg and --depth > 0");
    }
    return o;
}

udp::node_params make_params(const options& o)
{
    udp::node_params p;
    p.plane_addrs = o.local;
    p.transport.mtu = o.mtu;
    p.transport.paths = o.paths;
    if (o.min_rto_us != 0) {
        p.transport.min_rto_ns = o.min_rto_us * 1000;
    }
    p.transport.max_timeouts = o.max_timeouts;
    return p;
}

// Polls the node, hands completions to the host and watches the connection.
class driver {
public:
    explicit driver(const options& o) : n_(make_params(o)), deadline_(udp::node::now_ns() + uint64_t(o.timeout_s * 1e9)) {}
    udp::node& n() { return n_; }
    endpoint& ep() { return n_.ep(); }

    void step(peer_host* h)
    {
        const uint64_t now = udp::node::now_ns();
        if (now > deadline_) {
            throw std::runtime_error("timed out");
        }
        bool worked = n_.poll(now);
        completion wc[64];
        for (size_t i = 0, k = ep().poll_cq(wc); i < k; ++i) {
            worked = true;
            if (h != nullptr) {
                h->on_completion(wc[i], now);
            }
        }
        conn_event ev[8];
        for (size_t i = 0, k = ep().poll_events(ev); i < k; ++i) {
            if (ev[i].what == conn_event::kind::established) {
                established_ = ev[i].conn;
            } else if (h == nullptr) {
                throw std::runtime_error("the connection failed before it was established");
            } else if (ev[i].conn == h->conn() && ev[i].what == conn_event::kind::closed && await_close_) {
                peer_closed_ = true;
            } else if (ev[i].conn == h->conn()) {
                throw std::runtime_error("the connection ended (" +
                                         std::string(ev[i].what == conn_event::kind::error ? "error" : "closed") + ")");
            }
        }
        if (h != nullptr) {
            h->pump(now);
        }
        // Busy-poll while work flows; sleep on the sockets once idle for a while.
        if (worked) {
            idle_ = 0;
        } else if (++idle_ > 200) {
            n_.wait(500'000);
            idle_ = 0;
        }
    }
    conn_id established() const noexcept { return established_; }
    // A close of the peer's is expected (else any end of the connection is an error).
    void await_close() noexcept { await_close_ = true; }
    bool peer_closed() const noexcept { return peer_closed_; }

private:
    udp::node n_;
    uint64_t deadline_;
    conn_id established_ = k_no_conn;
    bool await_close_ = false;
    bool peer_closed_ = false;
    int idle_ = 0;
};

const char* verdict_name(verdict_state s)
{
    switch (s) {
    case verdict_state::ok: return "ok";
    case verdict_state::mismatch: return "mismatch";
    case verdict_state::not_checked: return "not checked";
    }
    return "?";
}

void print_counters(driver& d)
{
    const counters& c = d.ep().stats();
    const udp::udp_counters& u = d.n().counters();
    std::printf("udp_peer: transport: conn_errors %" PRIu64 ", retransmits %" PRIu64 ", timeouts %" PRIu64
                ", plane downs %" PRIu64 ", plane ups %" PRIu64 ", rx CE %" PRIu64 ", rx acks %" PRIu64
                ", conns expired %" PRIu64 "; sockets: tx %" PRIu64 " rx %" PRIu64
                " datagrams (plane 0: %" PRIu64 ", plane 1: %" PRIu64 "), tx errors %" PRIu64
                ", kernel drops %" PRIu64 "\n",
                c.conn_errors, c.retransmits, c.timeouts, c.plane_downs, c.plane_ups, c.rx_ce, c.rx_acks,
                c.conns_expired, u.tx_datagrams, u.rx_datagrams, u.rx_plane_datagrams[0], u.rx_plane_datagrams[1],
                u.tx_errors, u.rx_kernel_drops);
    std::fflush(stdout);
}

int run_on(driver& d, const options& o)
{
    std::printf("udp_peer: ready\n");
    std::fflush(stdout);
    if (o.connect != 0 && d.ep().connect(o.connect, udp::node::now_ns()) == k_no_conn) {
        throw std::runtime_error("connect refused by the core");
    }
    while (d.established() == k_no_conn) {
        d.step(nullptr);
    }
    peer_host h(d.ep(), d.established(), o.msg, o.depth);
    std::printf("udp_peer: connection %u established\n", unsigned(h.conn()));
    std::fflush(stdout);
    bool all_ok = true;
    size_t reported = 0;
    uint64_t started = 0;
    auto report_served = [&] {
        if (started != h.serving_started()) {
            started = h.serving_started();
            std::printf("udp_peer: serving %s\n", test_name(h.serving_test()));
            std::fflush(stdout);
        }
        for (; reported < h.served().size(); ++reported) {
            const interop::serve_report& s = h.served()[reported];
            // The receiver of the data checks it: we, unless we answered READs.
            const verdict_state want = s.test == test_kind::read_bw ? verdict_state::not_checked : verdict_state::ok;
            const bool ok = s.peer_iterations > 0 && s.errors == 0 && s.verdict.state == want && s.verdict.bad == 0;
            all_ok &= ok;
            std::printf("udp_peer: served %s: %" PRIu64 " messages (%" PRIu64 " receive completions here), %" PRIu64
                        " errors, data check %s (%" PRIu64 " bad bytes)\n",
                        test_name(s.test), s.peer_iterations, s.completions, s.errors, verdict_name(s.verdict.state),
                        s.verdict.bad);
            std::fflush(stdout);
        }
    };
    while (h.served().size() < o.serve) {
        d.step(&h);
        report_served();
    }
    for (const test_kind t : o.drive) {
        if (!h.start_run(t, udp::node::now_ns())) {
            throw std::runtime_error(std::string("cannot start ") + test_name(t));
        }
        while (!h.running() && !h.run_ended()) {
            d.step(&h);
        }
        std::printf("udp_peer: %s running\n", test_name(t));
        std::fflush(stdout);
        const uint64_t until = udp::node::now_ns() + uint64_t(o.seconds * 1e9);
        while (udp::node::now_ns() < until && !h.run_ended()) {
            d.step(&h);
        }
        h.stop_run(udp::node::now_ns());
        while (!h.run_ended()) {
            d.step(&h);
        }
        const interop::drive_report r = h.report();
        all_ok &= r.ok();
        const double secs = double(r.run_ns) / 1e9;
        std::printf("udp_peer: drove %s: %" PRIu64 " messages, %" PRIu64 " bytes in %.3f s = %.3f Gb/s, %" PRIu64
                    " errors%s%s; local check %s (%" PRIu64 " bad); peer verdict %s (%" PRIu64 " bad bytes)\n",
                    test_name(t), r.messages, r.bytes, secs, secs > 0 ? double(r.bytes) * 8 / secs / 1e9 : 0.0,
                    r.errors, r.failure.empty() ? "" : ", failure: ", r.failure.c_str(),
                    r.local_checked ? "done" : "none", r.local_bad,
                    r.answered ? verdict_name(r.verdict.state) : "missing", r.verdict.bad);
        std::fflush(stdout);
    }
    report_served();
    if (o.await_close) {
        d.await_close();
        while (!d.peer_closed()) {
            d.step(&h);
        }
        std::printf("udp_peer: the peer closed the connection\n");
    } else {
        // Close, and give the CLOSE and the last ACKs a moment to go out.
        d.ep().close(h.conn(), udp::node::now_ns());
    }
    print_counters(d);
    all_ok &= d.ep().stats().conn_errors == 0;
    const uint64_t until = udp::node::now_ns() + 50'000'000;
    while (udp::node::now_ns() < until) {
        d.n().poll(udp::node::now_ns());
    }
    std::printf("udp_peer: %s\n", all_ok ? "all runs ok" : "FAILED");
    return all_ok ? 0 : 1;
}

// The counters say why, when a run fails.
int run(const options& o)
{
    driver d(o);
    try {
        return run_on(d, o);
    } catch (const std::exception&) {
        print_counters(d);
        throw;
    }
}

} // namespace

int main(int argc, char** argv)
{
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "udp_peer: %s\n", e.what());
        return 2;
    }
}
