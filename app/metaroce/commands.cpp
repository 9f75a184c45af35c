// The prompt's commands, declared in one table: name, argument synopsis, help
// and handler. Parsing, dispatch and "help" all loop over the table.
#include <rte_ethdev.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>
#include <sstream>
#include <stdexcept>

#include "app.hpp"
#include "dpdk/port.hpp"
#include "dpdk/stats_json.hpp"

namespace metaroce::app {

namespace {

struct command {
    const char* name;
    const char* synopsis;
    const char* help;
    void (application::*run)(const std::vector<std::string>&);
};

const command k_commands[] = {
    {"help", "help", "list the commands", &application::cmd_help},
    {"show", "show port stats all|<port>", "ethdev and datapath counters of one or all ports",
     &application::cmd_show},
    {"show", "show conn [<id>] [json]", "connections (one in detail with its id)",
     &application::cmd_show},
    {"show", "show path <conn>", "the paths of a connection: plane, UDP port, window, RTT",
     &application::cmd_show},
    {"show", "show planes", "planes (ports), link and admin state", &application::cmd_show},
    {"set", "set plane <n> down|up", "take a plane out of service or back", &application::cmd_set},
    {"set", "set fwd write_bw|send_bw|read_bw|write_lat|send_lat", "the forwarding engine",
     &application::cmd_set},
    {"connect", "connect <addr> [nowait]", "open a connection to a peer node (nowait: do not wait for it)",
     &application::cmd_connect},
    {"close", "close <conn>", "close a connection (its requests flush)", &application::cmd_close},
    {"mr", "mr reg <len> none|<access>[,<access>...]",
     "register a region (local_write, remote_write, remote_read); prints its keys", &application::cmd_mr},
    {"mr", "mr dereg <lkey>", "deregister a region (its memory stays readable)", &application::cmd_mr},
    {"mr", "mr load <lkey> <offset> <file>", "copy a file's bytes into a region", &application::cmd_mr},
    {"mr", "mr read <lkey> <offset> <len>", "print bytes of a region in hex", &application::cmd_mr},
    {"post", "post recv <conn> <stream> <lkey> <offset> <len> <wr_id>", "post a receive",
     &application::cmd_post},
    {"post",
     "post send <conn> write|write_imm|send|send_imm|read <stream> <lkey> <offset> <len> <remote_va> "
     "<rkey> <imm> <wr_id> [unsignaled]",
     "post a send work request", &application::cmd_post},
    {"show", "show cq", "completions of the requests posted with 'post' (taken)", &application::cmd_show},
    {"show", "show stats", "datapath and transport counters as JSON", &application::cmd_show},
    {"start", "start", "run the engine on every ready connection", &application::cmd_start},
    {"stop", "stop", "stop it and print the accumulated statistics", &application::cmd_stop},
    {"clear", "clear stats", "zero the port, datapath and transport counters",
     &application::cmd_clear},
    {"quit", "quit", "stop and exit", &application::cmd_quit},
};

std::vector<std::string> split(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) {
        out.push_back(w);
    }
    return out;
}

uint64_t parse_number(const std::string& s, const char* what)
{
    size_t used = 0;
    uint64_t v = 0;
    try {
        if (!s.empty() && s[0] != '-') {
            v = std::stoull(s, &used, 0);
        }
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != s.size()) {
        throw std::invalid_argument(std::string("bad ") + what + " '" + s + "': not a number");
    }
    return v;
}

} // namespace

bool application::execute(const std::string& line)
{
    const auto args = split(line);
    if (args.empty() || args[0][0] == '#') {
        return true;
    }
    bool known = false;
    for (const command& c : k_commands) {
        if (args[0] == c.name) {
            known = true;
            try {
                (this->*c.run)(args);
            } catch (const std::invalid_argument& e) {
                std::printf("Bad arguments: %s\n", e.what());
            }
            break;
        }
    }
    if (!known) {
        std::printf("Unknown command '%s'; type 'help' for the list\n", args[0].c_str());
    }
    std::fflush(stdout);
    return !quit_;
}

void application::cmd_help(const std::vector<std::string>&)
{
    std::printf("Commands:\n");
    for (const command& c : k_commands) {
        std::printf("  %-52s %s\n", c.synopsis, c.help);
    }
}

namespace {
[[noreturn]] void usage_error(const char* synopsis, const std::string& why)
{
    throw std::invalid_argument(why + " (usage: " + synopsis + ")");
}
} // namespace

void application::cmd_show(const std::vector<std::string>& a)
{
    if (a.size() < 2) {
        usage_error("show port stats|conn|path|planes|cq|stats ...", "show what?");
    }
    if (a[1] == "port") {
        if (a.size() != 4 || a[2] != "stats") {
            usage_error("show port stats all|<port>", "expected 'stats' and a port");
        }
        show_port_stats(a[3]);
    } else if (a[1] == "conn") {
        show_conn(a);
    } else if (a[1] == "path") {
        show_path(a);
    } else if (a[1] == "planes") {
        if (a.size() != 2) {
            usage_error("show planes", "no arguments expected");
        }
        show_planes();
    } else if (a[1] == "cq" && a.size() == 2) {
        show_cq();
    } else if (a[1] == "stats" && a.size() == 2) {
        std::printf("stats: %s\n", stats_json().c_str());
    } else {
        usage_error("show port stats|conn|path|planes|cq|stats ...", "unknown object '" + a[1] + "'");
    }
}

void application::show_port_stats(const std::string& which)
{
    std::vector<uint16_t> ports;
    if (which == "all") {
        ports = cfg_.ports;
    } else {
        const uint64_t p = parse_number(which, "port");
        bool ours = false;
        for (uint16_t q : cfg_.ports) {
            ours |= q == p;
        }
        if (!ours) {
            throw std::invalid_argument("port " + which + " is not one of ours (planes use " +
                                        std::to_string(cfg_.ports.size()) + " port(s))");
        }
        ports.push_back(uint16_t(p));
    }
    for (uint16_t p : ports) {
        rte_eth_stats s{};
        rte_eth_stats_get(p, &s);
        std::printf("\n  ######################## NIC statistics for port %-2u #########################\n", p);
        std::printf("  RX-packets: %-10llu RX-missed: %-10llu RX-bytes:  %llu\n",
                    (unsigned long long)s.ipackets, (unsigned long long)s.imissed,
                    (unsigned long long)s.ibytes);
        std::printf("  RX-errors: %llu\n  RX-nombuf:  %-10llu\n", (unsigned long long)s.ierrors,
                    (unsigned long long)s.rx_nombuf);
        std::printf("  TX-packets: %-10llu TX-errors: %-10llu TX-bytes:  %llu\n",
                    (unsigned long long)s.opackets, (unsigned long long)s.oerrors,
                    (unsigned long long)s.obytes);
        std::printf("  ############################################################################\n");
    }
    std::string j;
    dp_->call([&] { j = dpdk::to_json(dp_->w().counters()).dump(); });
    std::printf("  datapath (lcore %u): %s\n", dp_->lcore(), j.c_str());
}

void application::show_conn(const std::vector<std::string>& a)
{
    const bool json = !a.empty() && a.back() == "json";
    const size_t n = a.size() - (json ? 1 : 0);
    if (n > 3) {
        usage_error("show conn [<id>] [json]", "too many arguments");
    }
    if (n == 3) {
        const conn_id id = conn_id(parse_number(a[2], "connection id"));
        std::optional<conn_info> info;
        dp_->call([&] { info = dp_->w().ep().inspect(id); });
        if (!info) {
            throw std::invalid_argument("no connection " + a[2] + " (see 'show conn')");
        }
        if (json) {
            std::printf("%s\n", dpdk::to_json(*info, false).dump().c_str());
            return;
        }
        std::printf("conn %u -> %s (peer conn %u) %s%s, %u paths, mtu %u, cwnd %.1f, inflight %u, "
                    "msgs outstanding %u, tx completed %llu, rx committed %llu, state %zu bytes\n",
                    info->id, dpdk::format_ipv4(info->peer_addr).c_str(), info->peer_conn,
                    std::string(to_string(info->state)).c_str(), info->incoming ? " (incoming)" : "",
                    info->paths, info->mtu, info->conn_cwnd, info->inflight, info->outstanding_msgs,
                    (unsigned long long)info->tx_msgs_completed,
                    (unsigned long long)info->rx_msgs_committed, info->state_bytes);
        return;
    }
    if (json) {
        std::printf("%s\n", conns_json().c_str());
        return;
    }
    std::vector<conn_info> all;
    dp_->call([&] {
        for (conn_id c : dp_->w().ep().connections()) {
            if (auto i = dp_->w().ep().inspect(c)) {
                all.push_back(*i);
            }
        }
    });
    if (all.empty()) {
        std::printf("no connections\n");
        return;
    }
    std::printf("%-8s %-16s %-12s %-9s %-6s %-10s %-12s\n", "id", "peer", "state", "incoming",
                "paths", "inflight", "tx_msgs");
    for (const auto& i : all) {
        std::printf("%-8u %-16s %-12s %-9s %-6u %-10u %-12llu\n", i.id,
                    dpdk::format_ipv4(i.peer_addr).c_str(), std::string(to_string(i.state)).c_str(),
                    i.incoming ? "yes" : "no", i.paths, i.inflight,
                    (unsigned long long)i.tx_msgs_completed);
    }
}

void application::show_path(const std::vector<std::string>& a)
{
    if (a.size() != 3) {
        usage_error("show path <conn>", "expected one connection id");
    }
    const conn_id id = conn_id(parse_number(a[2], "connection id"));
    std::optional<conn_info> info;
    dp_->call([&] { info = dp_->w().ep().inspect(id); });
    if (!info) {
        throw std::invalid_argument("no connection " + a[2] + " (see 'show conn')");
    }
    std::printf("%-5s %-5s %-6s %-8s %-8s %-8s %-10s %-10s %-8s %-10s %-8s\n", "path", "plane",
                "sport", "state", "cwnd", "inflight", "srtt_us", "rto_us", "timeouts", "tx_pkts",
                "ecn_frac");
    for (const auto& p : info->path) {
        const double ecn = p.acked_rx == 0 ? 0.0 : double(p.acked_ce) / double(p.acked_rx);
        std::printf("%-5u %-5u %-6u %-8s %-8.1f %-8u %-10.1f %-10.1f %-8u %-10llu %-8.3f\n", p.index,
                    p.plane, p.udp_sport, dpdk::path_state_name(p.state).c_str(),
                    p.cwnd, p.inflight, double(p.srtt_ns) / 1e3, double(p.rto_ns) / 1e3,
                    p.timeouts, (unsigned long long)p.tx_packets, ecn);
    }
}

void application::show_planes()
{
    std::vector<plane_info> eps;
    dpdk::worker_counters w;
    dp_->call([&] {
        eps = dp_->w().ep().planes();
        w = dp_->w().counters();
    });
    std::printf("%-6s %-5s %-14s %-18s %-16s %-6s %-6s %-6s %-9s %-6s %-12s %-12s\n", "plane", "port",
                "name", "mac", "address", "link", "admin", "used", "detected", "paths", "tx_frames",
                "rx_frames");
    const auto& caps = dp_->ports();
    for (size_t p = 0; p < cfg_.ports.size(); ++p) {
        const bool link = !link_down_[p].load();
        const bool adm = !admin_down_[p].load();
        const plane_info* ep = nullptr;
        for (const auto& e : eps) {
            ep = e.plane == p ? &e : ep;
        }
        std::printf("%-6zu %-5u %-14s %-18s %-16s %-6s %-6s %-6s %-9s %-6u %-12llu %-12llu\n", p, cfg_.ports[p],
                    caps[p].name.c_str(), dpdk::format_mac(caps[p].mac).c_str(),
                    dpdk::format_ipv4(dpdk::plane_ip(cfg_.address, uint8_t(p))).c_str(),
                    link ? "up" : "down", adm ? "up" : "down",
                    admin_.up[p].load() ? "yes" : "no",
                    ep == nullptr ? "-" : ep->detected_up ? "up" : "down", ep == nullptr ? 0u : ep->paths,
                    (unsigned long long)w.plane_tx_frames[p], (unsigned long long)w.plane_rx_frames[p]);
    }
}

void application::cmd_set(const std::vector<std::string>& a)
{
    if (a.size() >= 2 && a[1] == "plane") {
        if (a.size() != 4 || (a[3] != "down" && a[3] != "up")) {
            usage_error("set plane <n> down|up", "expected a plane and down or up");
        }
        const uint64_t p = parse_number(a[2], "plane");
        if (p >= cfg_.ports.size()) {
            throw std::invalid_argument("no plane " + a[2] + " (planes 0.." +
                                        std::to_string(cfg_.ports.size() - 1) + ")");
        }
        admin_down_[p].store(a[3] == "down");
        // The control thread publishes it; wait (bounded) so scripts see it done.
        const bool want = a[3] == "up" && !link_down_[p].load();
        for (int i = 0; i < 100 && admin_.up[p].load() != want; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        std::printf("plane %llu is now administratively %s\n", (unsigned long long)p, a[3].c_str());
        return;
    }
    if (a.size() >= 2 && a[1] == "fwd") {
        fwd_engine e;
        if (a.size() != 3 || !parse_engine(a[2], e)) {
            usage_error("set fwd write_bw|send_bw|read_bw|write_lat|send_lat",
                        a.size() == 3 ? "unknown engine '" + a[2] + "'" : "expected one engine");
        }
        if (started_) {
            throw std::invalid_argument("stop first: the engine is running");
        }
        dp_->call([&] { dp_->set_engine(e); });
        std::printf("Set %s packet forwarding mode\n", engine_name(e));
        return;
    }
    usage_error("set plane <n> down|up / set fwd <engine>",
                a.size() < 2 ? "set what?" : "unknown setting '" + a[1] + "'");
}

void application::cmd_connect(const std::vector<std::string>& a)
{
    uint32_t addr = 0;
    const bool nowait = a.size() == 3 && a[2] == "nowait";
    if ((a.size() != 2 && !nowait) || !dpdk::parse_ipv4(a[1], addr)) {
        usage_error("connect <addr>", a.size() < 2 || a.size() > 3 ? "expected one address"
                                               : a.size() == 3 && !nowait ? "unknown option '" + a[2] + "'"
                                                                          : "'" + a[1] + "' is not an IPv4 address");
    }
    if (addr == cfg_.address) {
        throw std::invalid_argument("that is this node's own address");
    }
    conn_id c = k_no_conn;
    dp_->call([&] { c = dp_->w().ep().connect(addr, dp_->now_ns()); });
    if (c == k_no_conn) {
        std::printf("connect: the connection table is full\n");
        return;
    }
    if (nowait) {
        std::printf("connection %u to %s: connecting\n", c, a[1].c_str());
        return;
    }
    // Wait (bounded) for the handshake so scripts can go on with 'start'.
    std::optional<conn_info> info;
    const uint64_t until = dp_->now_ns() + 3'000'000'000ull;
    size_t ready = 0;
    do {
        dp_->call([&] {
            info = dp_->w().ep().inspect(c);
            ready = dp_->peers_ready();
        });
    } while ((!info || info->state == conn_state::connecting || ready == 0) &&
             dp_->now_ns() < until);
    std::printf("connection %u to %s: %s\n", c, a[1].c_str(),
                info ? std::string(to_string(info->state)).c_str() : "gone");
}

void application::cmd_start(const std::vector<std::string>& a)
{
    if (a.size() != 1) {
        usage_error("start", "no arguments expected");
    }
    if (started_) {
        std::printf("Packet forwarding already started\n");
        return;
    }
    size_t ready = 0;
    fwd_engine e{};
    dp_->call([&] {
        dp_->start(dp_->now_ns());
        ready = dp_->peers_ready();
        e = dp_->engine();
    });
    started_ = true;
    std::printf("%s forwarding - connections ready=%zu - lcore %u\n", engine_name(e), ready,
                dp_->lcore());
}

void application::cmd_stop(const std::vector<std::string>& a)
{
    if (a.size() != 1) {
        usage_error("stop", "no arguments expected");
    }
    if (!started_) {
        std::printf("Packet forwarding not started\n");
        return;
    }
    run_stats r;
    dpdk::worker_counters w;
    counters t;
    dp_->call([&] {
        r = dp_->stop(dp_->now_ns());
        w = dp_->w().counters();
        t = dp_->w().ep().stats();
    });
    started_ = false;
    std::printf("Telling cores to stop...\nWaiting for lcores to finish...\n\n");
    for (uint16_t p : cfg_.ports) {
        rte_eth_stats s{};
        rte_eth_stats_get(p, &s);
        std::printf("  ---------------------- Forward statistics for port %-2u ----------------------\n", p);
        std::printf("  RX-packets: %-14llu RX-dropped: %-14llu RX-total: %llu\n",
                    (unsigned long long)s.ipackets, (unsigned long long)s.imissed,
                    (unsigned long long)(s.ipackets + s.imissed));
        std::printf("  TX-packets: %-14llu TX-dropped: %-14llu TX-total: %llu\n",
                    (unsigned long long)s.opackets, (unsigned long long)s.oerrors,
                    (unsigned long long)(s.opackets + s.oerrors));
        std::printf("  ----------------------------------------------------------------------------\n\n");
    }
    const double secs = double(r.stop_ns - r.start_ns) / 1e9;
    std::printf("  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++\n");
    std::printf("  RX-packets: %-14llu RX-dropped: %-14llu RX-total: %llu\n",
                (unsigned long long)w.rx_frames, (unsigned long long)w.rx_drops_total(),
                (unsigned long long)(w.rx_frames));
    std::printf("  TX-packets: %-14llu TX-dropped: %-14llu TX-total: %llu\n",
                (unsigned long long)w.tx_frames, (unsigned long long)(w.tx_plane_down + w.tx_bad_frame),
                (unsigned long long)(w.tx_frames + w.tx_plane_down + w.tx_bad_frame));
    std::printf("  Engine %s: %llu messages, %llu bytes in %.3f s = %.3f Gb/s, %llu errors\n",
                engine_name(r.engine), (unsigned long long)r.messages, (unsigned long long)r.bytes,
                secs, secs > 0 ? double(r.bytes) * 8 / secs / 1e9 : 0.0,
                (unsigned long long)r.errors);
    if (r.lat_samples != 0) {
        std::printf("  Latency (half RTT): min %.2f us, avg %.2f us, max %.2f us over %llu\n",
                    r.lat_min_us, r.lat_sum_us / double(r.lat_samples), r.lat_max_us,
                    (unsigned long long)r.lat_samples);
    }
    std::printf("  Transport: retransmits %llu, timeouts %llu, reroutes %llu, rx CE %llu\n",
                (unsigned long long)t.retransmits, (unsigned long long)t.timeouts,
                (unsigned long long)t.reroutes, (unsigned long long)t.rx_ce);
    std::printf("  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++\n\nDone.\n");
}

void application::cmd_clear(const std::vector<std::string>& a)
{
    if (a.size() != 2 || a[1] != "stats") {
        usage_error("clear stats", "expected 'stats'");
    }
    for (uint16_t p : cfg_.ports) {
        rte_eth_stats_reset(p);
    }
    dp_->call([&] {
        dp_->w().clear_counters();
        dp_->w().ep().clear_stats();
    });
    std::printf("Statistics cleared\n");
}

void application::cmd_quit(const std::vector<std::string>& a)
{
    if (a.size() != 1) {
        usage_error("quit", "no arguments expected");
    }
    if (started_) {
        cmd_stop({"stop"});
    }
    quit_ = true;
}

// ---- application control: what an application on this node would do ----------------

namespace {

uint32_t parse_access(const std::string& s)
{
    if (s == "none") {
        return 0;
    }
    uint32_t a = 0;
    std::istringstream in(s);
    for (std::string w; std::getline(in, w, ',');) {
        if (w == "local_write") {
            a |= access::local_write;
        } else if (w == "remote_write") {
            a |= access::remote_write;
        } else if (w == "remote_read") {
            a |= access::remote_read;
        } else {
            throw std::invalid_argument("unknown access '" + w + "' (local_write, remote_write, remote_read)");
        }
    }
    return a;
}

bool parse_wr_opcode(const std::string& s, wr_opcode& op)
{
    const std::pair<const char*, wr_opcode> names[] = {{"write", wr_opcode::write},
                                                       {"write_imm", wr_opcode::write_imm},
                                                       {"send", wr_opcode::send},
                                                       {"send_imm", wr_opcode::send_imm},
                                                       {"read", wr_opcode::read}};
    for (const auto& [n, o] : names) {
        if (s == n) {
            op = o;
            return true;
        }
    }
    return false;
}

// Identifiers (as in verbs), one word each, so scripts can parse the lines.
const char* wc_status_name(wc_status st)
{
    static const char* const names[] = {"success",         "loc_len_err",       "loc_prot_err",
                                        "wr_flush_err",    "rem_access_err",    "rem_inv_req_err",
                                        "rnr_retry_exc_err", "retry_exc_err",   "rem_op_err"};
    return size_t(st) < std::size(names) ? names[size_t(st)] : "?";
}

const char* post_result_name(post_result r)
{
    static const char* const names[] = {"ok",         "no_such_conn", "conn_not_usable",
                                        "queue_full", "bad_stream",   "bad_lkey",
                                        "bad_access", "out_of_bounds", "too_long"};
    return size_t(r) < std::size(names) ? names[size_t(r)] : "?";
}

const char* wc_opcode_name(wc_opcode op)
{
    switch (op) {
    case wc_opcode::write: return "write";
    case wc_opcode::send: return "send";
    case wc_opcode::read: return "read";
    case wc_opcode::recv: return "recv";
    case wc_opcode::recv_rdma_with_imm: return "recv_rdma_with_imm";
    }
    return "?";
}

} // namespace

const memory_region& application::user_region(uint32_t lkey) const
{
    for (const user_mr& u : user_mrs_) {
        if (u.mr.lkey == lkey) {
            return u.mr;
        }
    }
    throw std::invalid_argument("no region with lkey " + std::to_string(lkey) + " (see 'mr reg')");
}

void application::cmd_mr(const std::vector<std::string>& a)
{
    const std::string what = a.size() >= 2 ? a[1] : "";
    if (what == "reg" && a.size() == 4) {
        const uint64_t len = parse_number(a[2], "length");
        const uint32_t acc = parse_access(a[3]);
        if (len == 0 || len > (1ull << 30)) {
            throw std::invalid_argument("length must be 1..2^30");
        }
        user_mr u;
        u.buf = dpdk::eal_buffer("mr_user", len, -1);
        std::optional<memory_region> mr;
        dp_->call([&] { mr = dp_->w().ep().memory().register_region(u.buf.data(), len, acc); });
        if (!mr) {
            std::printf("mr: the region table is full\n");
            return;
        }
        u.mr = *mr;
        std::printf("mr registered: lkey 0x%x rkey 0x%x va 0x%llx len %llu\n", mr->lkey, mr->rkey,
                    (unsigned long long)mr->va, (unsigned long long)len);
        user_mrs_.push_back(std::move(u));
    } else if (what == "dereg" && a.size() == 3) {
        const memory_region& mr = user_region(uint32_t(parse_number(a[2], "lkey")));
        bool ok = false;
        dp_->call([&] { ok = dp_->w().ep().memory().deregister(mr.lkey); });
        std::printf("mr %s: lkey 0x%x\n", ok ? "deregistered" : "not registered", mr.lkey);
    } else if (what == "load" && a.size() == 5) {
        const memory_region& mr = user_region(uint32_t(parse_number(a[2], "lkey")));
        const uint64_t off = parse_number(a[3], "offset");
        std::ifstream f(a[4], std::ios::binary);
        if (!f) {
            throw std::invalid_argument("cannot read " + a[4]);
        }
        const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (off > mr.length || bytes.size() > mr.length - off) {
            throw std::invalid_argument("the file does not fit in the region at that offset");
        }
        dp_->call([&] { std::copy(bytes.begin(), bytes.end(), mr.host + off); });
        std::printf("mr loaded: %zu bytes\n", bytes.size());
    } else if (what == "read" && a.size() == 5) {
        const memory_region& mr = user_region(uint32_t(parse_number(a[2], "lkey")));
        const uint64_t off = parse_number(a[3], "offset");
        const uint64_t len = parse_number(a[4], "length");
        if (off > mr.length || len > mr.length - off) {
            throw std::invalid_argument("the range is outside the region");
        }
        std::string hex(2 * len, '0');
        dp_->call([&] {
            static const char* k = "0123456789abcdef";
            for (uint64_t i = 0; i < len; ++i) {
                hex[2 * i] = k[mr.host[off + i] >> 4];
                hex[2 * i + 1] = k[mr.host[off + i] & 15];
            }
        });
        std::printf("mr data: %s\n", hex.c_str());
    } else {
        usage_error("mr reg|dereg|load|read ...", "see 'help' for the mr commands");
    }
}

void application::cmd_post(const std::vector<std::string>& a)
{
    const bool recv = a.size() == 8 && a[1] == "recv";
    const bool send = (a.size() == 12 || (a.size() == 13 && a[12] == "unsignaled")) && a[1] == "send";
    if (!recv && !send) {
        usage_error("post recv ... / post send ...", "see 'help' for the arguments");
    }
    const conn_id c = conn_id(parse_number(a[2], "connection id"));
    post_result r = post_result::ok;
    if (recv) {
        const uint16_t stream = uint16_t(parse_number(a[3], "stream"));
        const memory_region& mr = user_region(uint32_t(parse_number(a[4], "lkey")));
        recv_wr wr;
        wr.local = sge{mr.va + parse_number(a[5], "offset"), uint32_t(parse_number(a[6], "length")), mr.lkey};
        wr.wr_id = datapath::user_wr_id(parse_number(a[7], "wr_id"));
        dp_->call([&] { r = dp_->w().ep().post_recv(c, stream, wr); });
    } else {
        send_wr wr;
        if (!parse_wr_opcode(a[3], wr.op)) {
            throw std::invalid_argument("unknown opcode '" + a[3] + "'");
        }
        wr.stream = uint16_t(parse_number(a[4], "stream"));
        const memory_region& mr = user_region(uint32_t(parse_number(a[5], "lkey")));
        wr.local = sge{mr.va + parse_number(a[6], "offset"), uint32_t(parse_number(a[7], "length")), mr.lkey};
        wr.remote_va = parse_number(a[8], "remote_va");
        wr.rkey = uint32_t(parse_number(a[9], "rkey"));
        wr.imm = uint32_t(parse_number(a[10], "imm"));
        wr.wr_id = datapath::user_wr_id(parse_number(a[11], "wr_id"));
        wr.signaled = a.size() == 12;
        dp_->call([&] { r = dp_->w().ep().post_send(c, wr, dp_->now_ns()); });
    }
    std::printf("post: %s (%s)\n", post_result_name(r), std::string(to_string(r)).c_str());
}

void application::show_cq()
{
    std::vector<completion> cq;
    dp_->call([&] { cq = dp_->take_user_completions(); });
    for (const completion& w : cq) {
        std::printf("wc %llu conn %u stream %u status %s op %s len %u imm %s\n", (unsigned long long)w.wr_id,
                    w.conn, w.stream, wc_status_name(w.status), wc_opcode_name(w.op), w.byte_len,
                    w.has_imm ? std::to_string(w.imm).c_str() : "-");
    }
    std::printf("cq: %zu completions\n", cq.size());
}

void application::cmd_close(const std::vector<std::string>& a)
{
    if (a.size() != 2) {
        usage_error("close <conn>", "expected one connection id");
    }
    const conn_id c = conn_id(parse_number(a[1], "connection id"));
    bool known = false;
    dp_->call([&] {
        known = dp_->w().ep().inspect(c).has_value();
        dp_->w().ep().close(c, dp_->now_ns());
    });
    std::printf("close: conn %u%s\n", c, known ? "" : " (no such connection)");
}

} // namespace metaroce::app
