// The `dpdk` target: the real metaroce app on a net_af_packet port in a network
// namespace. The tester reaches it over a veth pair with Ethernet/IPv4/UDP frames of
// its own (drivers/dpdk/encap), and does what an application would through the app's
// prompt ("mr reg", "post send", "show cq", ...). The `udp` target is the same app on
// --backend udp: the kernel owns the veth end (address, static neighbours) and the app
// binds its sockets there; the tester's side does not change.
#include <linux/if_packet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

#include "dpdk/encap.hpp"
#include "dpdk_env.hpp"
#include "metaroce/wire/headers.hpp"
#include "target.hpp"

namespace metaroce::conformance {

namespace {

uint64_t mono_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

bool starts(const std::string& s, const char* p)
{
    return s.rfind(p, 0) == 0;
}

std::string hex_addr(uint64_t v)
{
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
}

// The app prints statuses and results by their verbs-style identifiers.
template <typename E, size_t N>
E from_name(const std::string& s, const char* const (&names)[N], E fallback)
{
    for (size_t i = 0; i < N; ++i) {
        if (s == names[i]) {
            return E(i);
        }
    }
    return fallback;
}
const char* const k_status_names[] = {"success",         "loc_len_err",       "loc_prot_err",
                                      "wr_flush_err",    "rem_access_err",    "rem_inv_req_err",
                                      "rnr_retry_exc_err", "retry_exc_err",   "rem_op_err"};
const char* const k_post_names[] = {"ok",         "no_such_conn", "conn_not_usable", "queue_full", "bad_stream",
                                    "bad_lkey",   "bad_access",   "out_of_bounds",   "too_long"};
const char* const k_state_names[] = {"connecting", "established", "closing", "closed", "error"};

class dpdk_target final : public target {
public:
    explicit dpdk_target(const dpdk_options& o) : opts_(o)
    {
        if (o.app.empty() || ::access(o.app.c_str(), X_OK) != 0) {
            throw std::runtime_error("no metaroce app at '" + o.app + "' (give --app)");
        }
        caps_.frames = !o.udp_backend;
        caps_.counters = true;
        dir_ = "/tmp/mrconf-" + std::to_string(getpid());
        std::system(("mkdir -p " + dir_).c_str());
        // A 10 ms minimum RTO: the tester answers from user space through a veth, so it
        // is given a few ms before the app's timers fire.
        std::ofstream(dir_ + "/node.json")
            << R"({"address": "10.0.0.1", "ports": [0], "transport": {"mtu": 1024, "paths": 16,)"
            << R"( "min_rto_us": 10000, "initial_rtt_us": 3000}})";
        env_ = std::make_unique<netns_env>();
        fd_ = env_->open_raw_socket(tester_mac_, app_mac_);
        if (o.udp_backend) {
            env_->address_app_end("10.0.0.1", {"10.0.0.2", "10.0.0.3"}, tester_mac_);
        }
        start_app();
    }

    ~dpdk_target() override
    {
        stop_app();
        if (fd_ >= 0) {
            ::close(fd_);
        }
        env_.reset();
        std::system(("rm -rf " + dir_).c_str());
    }

    std::string name() const override { return opts_.udp_backend ? "udp" : "dpdk"; }
    const target_caps& caps() const override { return caps_; }

    bool restart_node() override
    {
        stop_app();
        start_app();
        return true;
    }

    void send(const datagram& d) override
    {
        std::vector<uint8_t> f(dpdk::k_frame_overhead + d.bytes.size());
        std::memcpy(f.data() + dpdk::k_frame_overhead, d.bytes.data(), d.bytes.size());
        dpdk::tx_addressing a;
        std::memcpy(a.src_mac.bytes.data(), tester_mac_.data(), 6);
        std::memcpy(a.dst_mac.bytes.data(), app_mac_.data(), 6);
        a.src_ip = d.src_addr + (uint32_t(d.plane) << 8);
        a.dst_ip = d.dst_addr + (uint32_t(d.plane) << 8);
        a.udp_sport = d.udp_sport;
        a.udp_dport = wire::k_udp_dst_port;
        a.ect = true;
        dpdk::tx_csum_mode csum;
        csum.udp_software = true;
        dpdk::write_headers(f.data(), a, d.bytes.size(), csum);
        if (d.ce) {
            auto* h = reinterpret_cast<dpdk::frame_headers*>(f.data());
            h->ip.tos = uint8_t((h->ip.tos & ~dpdk::ecn::mask) | dpdk::ecn::ce);
            h->ip.checksum = wire::be16_t::from_host(dpdk::ipv4_header_checksum(h->ip));
        }
        send_frame(f);
    }

    void send_frame(std::span<const uint8_t> frame) override
    {
        if (::send(fd_, frame.data(), frame.size(), 0) < 0) {
            throw std::runtime_error("sending a frame failed: " + std::string(std::strerror(errno)));
        }
    }

    bool recv(datagram& out, uint64_t timeout_ns) override
    {
        const uint64_t deadline = mono_ns() + timeout_ns;
        std::vector<uint8_t> buf(16384);
        for (;;) {
            sockaddr_ll from{};
            socklen_t fl = sizeof from;
            const ssize_t n = recvfrom(fd_, buf.data(), buf.size(), MSG_DONTWAIT,
                                       reinterpret_cast<sockaddr*>(&from), &fl);
            if (n > 0) {
                if (from.sll_pkttype == PACKET_OUTGOING) {
                    continue; // our own frames
                }
                const std::span<const uint8_t> fr(buf.data(), size_t(n));
                // Checksums are the audit's business: take the frame as it is.
                const dpdk::rx_result r = dpdk::parse_frame(fr, wire::k_udp_dst_port, {true, true});
                if (r.drop != dpdk::rx_drop::none || r.pkt.src_ip != k_iut_addr) {
                    continue;
                }
                const auto* h = reinterpret_cast<const dpdk::frame_headers*>(buf.data());
                out = datagram{};
                out.bytes.assign(r.pkt.payload.begin(), r.pkt.payload.end());
                out.src_addr = r.pkt.src_ip;
                out.dst_addr = r.pkt.dst_ip;
                out.plane = 0;
                out.udp_sport = r.pkt.udp_sport;
                out.ect = (h->ip.tos & dpdk::ecn::mask) == dpdk::ecn::ect0;
                out.at_ns = mono_ns();
                out.frame.assign(fr.begin(), fr.end());
                return true;
            }
            const uint64_t now = mono_ns();
            if (now >= deadline) {
                return false;
            }
            const uint64_t left = deadline - now;
            timespec ts{time_t(left / 1'000'000'000ull), long(left % 1'000'000'000ull)};
            pollfd p{fd_, POLLIN, 0};
            ppoll(&p, 1, &ts, nullptr);
        }
    }

    uint64_t now_ns() override { return mono_ns(); }
    std::vector<uint8_t> iut_mac() override { return app_mac_; }
    std::vector<uint8_t> tester_mac() override { return tester_mac_; }

    std::optional<region> reg_mr(uint64_t len, uint32_t acc) override
    {
        std::string a;
        for (const auto& [bit, n] : {std::pair{access::local_write, "local_write"},
                                     std::pair{access::remote_write, "remote_write"},
                                     std::pair{access::remote_read, "remote_read"}}) {
            if ((acc & bit) != 0) {
                a += a.empty() ? "" : ",";
                a += n;
            }
        }
        const auto out = cmd("mr reg " + std::to_string(len) + " " + (a.empty() ? "none" : a), "mr registered:");
        unsigned lkey = 0, rkey = 0;
        unsigned long long va = 0, l = 0;
        if (std::sscanf(out.back().c_str(), "mr registered: lkey %x rkey %x va %llx len %llu", &lkey, &rkey, &va, &l) != 4) {
            return std::nullopt;
        }
        return region{va, l, lkey, rkey};
    }

    bool dereg_mr(const region& r) override
    {
        return starts(cmd("mr dereg " + hex_addr(r.lkey), "mr ").back(), "mr deregistered");
    }

    bool write_mem(const region& r, uint64_t off, std::span<const uint8_t> bytes) override
    {
        const std::string file = dir_ + "/load.bin";
        std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return starts(cmd("mr load " + hex_addr(r.lkey) + " " + std::to_string(off) + " " + file, "mr loaded:").back(),
                      "mr loaded:");
    }

    std::vector<uint8_t> read_mem(const region& r, uint64_t off, uint64_t len) override
    {
        const auto out = cmd("mr read " + hex_addr(r.lkey) + " " + std::to_string(off) + " " + std::to_string(len), "mr data:");
        const std::string& l = out.back();
        if (!starts(l, "mr data: ")) {
            return {};
        }
        std::vector<uint8_t> v;
        for (size_t i = 9; i + 1 < l.size(); i += 2) {
            v.push_back(uint8_t(std::stoul(l.substr(i, 2), nullptr, 16)));
        }
        return v;
    }

    post_result post_recv(conn_id c, uint16_t stream, const region& r, uint64_t off, uint32_t len,
                          uint64_t wr_id) override
    {
        return posted(cmd("post recv " + std::to_string(c) + " " + std::to_string(stream) + " " + hex_addr(r.lkey) +
                              " " + std::to_string(off) + " " + std::to_string(len) + " " + std::to_string(wr_id),
                          "post:"));
    }

    post_result post_send(conn_id c, const send_req& s) override
    {
        static const char* ops[] = {"write", "write_imm", "send", "send_imm", "read"};
        return posted(cmd("post send " + std::to_string(c) + " " + ops[size_t(s.op)] + " " + std::to_string(s.stream) +
                              " " + hex_addr(s.local.lkey) + " " + std::to_string(s.offset) + " " +
                              std::to_string(s.length) + " " + hex_addr(s.remote_va) + " " + hex_addr(s.rkey) + " " +
                              std::to_string(s.imm) + " " + std::to_string(s.wr_id) + (s.signaled ? "" : " unsignaled"),
                          "post:"));
    }

    std::vector<completion> poll_cq() override
    {
        std::vector<completion> all;
        for (const std::string& l : cmd("show cq", "cq:")) {
            unsigned long long id = 0;
            unsigned conn = 0, stream = 0, len = 0;
            char st[32] = {}, op[32] = {}, imm[16] = {};
            if (std::sscanf(l.c_str(), "wc %llu conn %u stream %u status %31s op %31s len %u imm %15s", &id, &conn,
                            &stream, st, op, &len, imm) != 7) {
                continue;
            }
            completion w;
            w.wr_id = id;
            w.conn = conn;
            w.stream = uint16_t(stream);
            w.status = from_name(std::string(st), k_status_names, wc_status::loc_len_err);
            const std::string o = op;
            w.op = o == "write"  ? wc_opcode::write
                   : o == "send" ? wc_opcode::send
                   : o == "read" ? wc_opcode::read
                   : o == "recv" ? wc_opcode::recv
                                 : wc_opcode::recv_rdma_with_imm;
            w.byte_len = len;
            w.has_imm = std::strcmp(imm, "-") != 0;
            w.imm = w.has_imm ? uint32_t(std::stoul(imm)) : 0;
            all.push_back(w);
        }
        return all;
    }

    conn_id connect(uint32_t peer) override
    {
        char a[32];
        std::snprintf(a, sizeof a, "%u.%u.%u.%u", peer >> 24, (peer >> 16) & 255, (peer >> 8) & 255, peer & 255);
        const auto out = cmd(std::string("connect ") + a + " nowait", "connection");
        unsigned id = 0;
        return std::sscanf(out.back().c_str(), "connection %u to", &id) == 1 ? id : k_no_conn;
    }

    void close(conn_id c) override { cmd("close " + std::to_string(c), "close:"); }

    std::optional<conn_state> state(conn_id c) override
    {
        const auto out = cmd("show conn " + std::to_string(c), "conn ");
        static const std::regex k_line(R"(^conn \d+ -> \S+ \(peer conn \d+\) (\w+))");
        std::smatch m;
        if (!std::regex_search(out.back(), m, k_line)) {
            return std::nullopt;
        }
        return from_name(m[1].str(), k_state_names, conn_state::error);
    }

    std::optional<uint64_t> counter(std::string_view name) override
    {
        const auto out = cmd("show stats", "stats:");
        try {
            const auto j = nlohmann::json::parse(out.back().substr(7));
            std::string key(name.substr(0, name.find('.'))); // rx_malformed.<why>: the app shows the total
            const auto& t = j.at("transport");
            if (t.contains(key)) {
                return t.at(key).get<uint64_t>();
            }
        } catch (const std::exception&) {
        }
        return std::nullopt;
    }

private:
    void stop_app()
    {
        app_.reset();
        if (!prefix_.empty()) {
            // The EAL's runtime files of that process.
            std::system(("rm -rf /var/run/dpdk/" + prefix_).c_str());
        }
    }

    void start_app()
    {
        prefix_ = "mrconf" + std::to_string(getpid()) + "-" + std::to_string(++starts_);
        const std::string& prefix = prefix_;
        std::vector<std::string> argv = {opts_.app,
                                         "-l",
                                         "0,1",
                                         "--no-huge",
                                         "-m",
                                         "256",
                                         "--no-pci",
                                         "--file-prefix=" + prefix,
                                         "--log-level=*:warning",
                                         "--vdev=net_af_packet0,iface=" + env_->app_if(),
                                         "--",
                                         "--config",
                                         dir_ + "/node.json",
                                         "-i"};
        if (opts_.udp_backend) { // no port: the kernel's veth end
            std::erase_if(argv, [](const std::string& a) { return starts(a, "--vdev="); });
            argv.push_back("--backend");
            argv.push_back("udp");
        }
        app_ = std::make_unique<app_process>(env_->ns(), argv, opts_.verbose);
        app_->wait_for([](const std::string& l) { return starts(l, "metaroce: node"); }, 20000);
        // Drain anything left from a previous run of the app.
        datagram d;
        while (recv(d, 0)) {
        }
    }

    std::vector<std::string> cmd(const std::string& line, const char* done)
    {
        auto out = app_->command(line, [done](const std::string& l) { return starts(l, done); });
        if (starts(out.back(), "Bad arguments") || starts(out.back(), "Unknown command")) {
            if (line.rfind("show conn", 0) == 0) {
                return out; // "no connection N": gone
            }
            throw std::runtime_error("the app refused '" + line + "': " + out.back());
        }
        return out;
    }

    static post_result posted(const std::vector<std::string>& out)
    {
        const std::string& l = out.back(); // "post: <name> (<text>)"
        return from_name(l.substr(6, l.find(' ', 6) - 6), k_post_names, post_result::bad_lkey);
    }

    dpdk_options opts_;
    target_caps caps_;
    std::string dir_;
    std::unique_ptr<netns_env> env_;
    std::unique_ptr<app_process> app_;
    int fd_ = -1;
    std::vector<uint8_t> tester_mac_, app_mac_;
    int starts_ = 0;
    std::string prefix_;
};

} // namespace

std::unique_ptr<target> make_dpdk_target(const dpdk_options& o)
{
    return std::make_unique<dpdk_target>(o);
}

std::unique_ptr<target> make_udp_target(const dpdk_options& o)
{
    dpdk_options u = o;
    u.udp_backend = true;
    return std::make_unique<dpdk_target>(u);
}

} // namespace metaroce::conformance
