#include "raw.hpp"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "dpdk/eal.hpp"
#include "dpdk/encap.hpp"
#include "dpdk/link_guard.hpp" // the bursts hold memif's peer handling off
#include "dpdk/planes.hpp"
#include "metaroce/wire/codec.hpp"

namespace metaroce::perf {

extern std::atomic<bool> g_quit;

namespace {

// First payload byte of raw frames; never a transport version.
enum raw_kind : uint8_t { raw_data = 0xe1, raw_end = 0xe2, raw_ping = 0xe3, raw_pong = 0xe4 };
constexpr uint16_t k_raw_burst = 32;

struct raw_port {
    uint16_t port = 0;
    dpdk::mac_addr mac{};
    rte_mempool* pool = nullptr;
    dpdk::tsc_clock clk;
};

rte_mbuf* make_frame(raw_port& p, uint32_t src, uint32_t dst, size_t payload, raw_kind k,
                     uint64_t seq)
{
    rte_mbuf* m = rte_pktmbuf_alloc(p.pool);
    if (m == nullptr) {
        return nullptr;
    }
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    uint8_t* pl = f + dpdk::k_frame_overhead;
    std::memset(pl, 0, std::min<size_t>(payload, 64));
    pl[0] = k;
    std::memcpy(pl + 8, &seq, sizeof seq);
    dpdk::tx_addressing a;
    a.src_mac = p.mac;
    a.dst_mac = dpdk::k_broadcast_mac;
    a.src_ip = src;
    a.dst_ip = dst;
    a.udp_sport = wire::k_udp_sport_min;
    a.udp_dport = wire::k_udp_dst_port;
    const size_t len = dpdk::write_headers(f, a, payload, {});
    m->data_len = uint16_t(len);
    m->pkt_len = uint32_t(len);
    return m;
}

// Kind and sequence of a received raw frame; false for anything else.
bool read_frame(rte_mbuf* m, raw_kind& k, uint64_t& seq, uint32_t* src = nullptr)
{
    const auto r = dpdk::parse_frame({rte_pktmbuf_mtod(m, const uint8_t*), m->data_len},
                                     wire::k_udp_dst_port, {});
    if (r.drop != dpdk::rx_drop::none || r.pkt.payload.size() < 16) {
        return false;
    }
    k = raw_kind(r.pkt.payload[0]);
    if (src != nullptr) {
        *src = r.pkt.src_ip;
    }
    std::memcpy(&seq, r.pkt.payload.data() + 8, sizeof seq);
    return true;
}

void send_all(raw_port& p, rte_mbuf** pkts, uint16_t n)
{
    uint16_t sent = 0;
    while (sent < n && !g_quit.load(std::memory_order_relaxed)) {
        sent += dpdk::link_guard::tx_burst(p.port, 0, pkts + sent, uint16_t(n - sent));
    }
    rte_pktmbuf_free_bulk(pkts + sent, n - sent);
}

double to_unit(const options& o, double bytes_per_s)
{
    return o.report_gbits ? bytes_per_s * 8 / 1e9 : bytes_per_s / (1 << 20);
}

int raw_bw_client(raw_port& p, const options& o, size_t payload, size_t frame)
{
    const uint64_t frames = std::max<uint64_t>(1, o.iters * ((o.size + o.mtu - 1) / o.mtu));
    const uint64_t start = p.clk.now_ns();
    const uint64_t stop_at =
        o.duration_s != 0 ? start + uint64_t(o.duration_s) * 1'000'000'000ull : UINT64_MAX;
    uint64_t sent = 0;
    std::array<rte_mbuf*, k_raw_burst> pkts;
    while ((o.duration_s != 0 ? p.clk.now_ns() < stop_at : sent < frames) &&
           !g_quit.load(std::memory_order_relaxed)) {
        uint16_t n = 0;
        while (n < k_raw_burst) {
            pkts[n] = make_frame(p, o.local_addr, o.server_addr, payload, raw_data, sent + n);
            if (pkts[n] == nullptr) {
                break;
            }
            ++n;
        }
        const uint16_t took = dpdk::link_guard::tx_burst(p.port, 0, pkts.data(), n);
        rte_pktmbuf_free_bulk(pkts.data() + took, n - took);
        sent += took;
    }
    const double secs = double(p.clk.now_ns() - start) / 1e9;
    for (int i = 0; i < 16; ++i) {
        rte_mbuf* m = make_frame(p, o.local_addr, o.server_addr, 64, raw_end, sent);
        if (m != nullptr) {
            send_all(p, &m, 1);
        }
    }
    bw_result r;
    r.bytes = frame;
    r.iters = sent;
    r.seconds = secs;
    r.avg = r.peak = to_unit(o, double(sent) * double(frame) / secs);
    r.msg_rate_mpps = double(sent) / secs / 1e6;
    print_bw_title(o);
    print_bw_row(r);
    print_dashes();
    std::printf(" (client: frames sent; the server's line is what arrived)\n");
    if (!o.out_json.empty()) {
        write_json(o.out_json, o, run_info{}, {r}, {}, false, "skipped");
    }
    return 0;
}

int raw_bw_server(raw_port& p, const options& o, size_t frame)
{
    std::array<rte_mbuf*, k_raw_burst> pkts;
    uint64_t got = 0;
    uint64_t first = 0;
    uint64_t last = 0;
    const uint64_t deadline = p.clk.now_ns() + (uint64_t(o.timeout_s) + o.duration_s) * 1'000'000'000ull;
    bool done = false;
    while (!done && !g_quit.load(std::memory_order_relaxed) && p.clk.now_ns() < deadline) {
        const uint16_t n = dpdk::link_guard::rx_burst(p.port, 0, pkts.data(), k_raw_burst);
        const uint64_t now = n != 0 ? p.clk.now_ns() : 0;
        for (uint16_t i = 0; i < n; ++i) {
            raw_kind k;
            uint64_t seq;
            if (read_frame(pkts[i], k, seq)) {
                if (k == raw_data) {
                    if (got++ == 0) {
                        first = now;
                    }
                    last = now;
                } else if (k == raw_end) {
                    done = true;
                }
            }
        }
        rte_pktmbuf_free_bulk(pkts.data(), n);
    }
    if (got < 2) {
        std::fprintf(stderr, "metaroce-perf: raw: received %llu frames\n",
                     static_cast<unsigned long long>(got));
        return 1;
    }
    bw_result r;
    r.bytes = frame;
    r.iters = got;
    r.seconds = double(last - first) / 1e9;
    r.avg = r.peak = to_unit(o, double(got - 1) * double(frame) / r.seconds);
    r.msg_rate_mpps = double(got - 1) / r.seconds / 1e6;
    print_bw_title(o);
    print_bw_row(r);
    print_dashes();
    if (!o.out_json.empty()) {
        write_json(o.out_json, o, run_info{}, {r}, {}, false, "skipped");
    }
    return 0;
}

int raw_lat(raw_port& p, const options& o, size_t payload)
{
    std::array<rte_mbuf*, k_raw_burst> pkts;
    std::vector<double> samples;
    const uint64_t deadline = p.clk.now_ns() + uint64_t(o.timeout_s) * 1'000'000'000ull;
    uint64_t echoed = 0;
    // The client pings o.iters times; the server echoes until the client's end frame.
    for (uint64_t i = 0; o.client ? i < o.iters : true; ++i) {
        uint64_t t0 = p.clk.now_ns();
        if (o.client) {
            rte_mbuf* m = make_frame(p, o.local_addr, o.server_addr, payload, raw_ping, i);
            if (m == nullptr) {
                throw std::runtime_error("raw: mbuf pool empty");
            }
            send_all(p, &m, 1);
        }
        bool answered = false;
        while (!answered) {
            if (g_quit.load(std::memory_order_relaxed) || p.clk.now_ns() > deadline + (o.client ? 0 : 3'600'000'000'000ull)) {
                throw std::runtime_error("raw: timed out waiting for the peer");
            }
            const uint16_t n = dpdk::link_guard::rx_burst(p.port, 0, pkts.data(), k_raw_burst);
            for (uint16_t j = 0; j < n; ++j) {
                raw_kind k;
                uint64_t seq;
                uint32_t src = 0;
                if (!read_frame(pkts[j], k, seq, &src)) {
                    continue;
                }
                if (o.client && k == raw_pong && seq == i) {
                    samples.push_back(double(p.clk.now_ns() - t0) / 2e3);
                    answered = true;
                } else if (!o.client && k == raw_ping) {
                    rte_mbuf* m = make_frame(p, o.local_addr, src, payload,
                                             raw_pong, seq);
                    if (m != nullptr) {
                        send_all(p, &m, 1);
                    }
                    ++echoed;
                } else if (!o.client && k == raw_end) {
                    rte_pktmbuf_free_bulk(pkts.data(), n);
                    std::printf(" echoed %llu pings\n", static_cast<unsigned long long>(echoed));
                    print_dashes();
                    return 0;
                }
            }
            rte_pktmbuf_free_bulk(pkts.data(), n);
        }
    }
    for (int i = 0; i < 16; ++i) {
        rte_mbuf* m = make_frame(p, o.local_addr, o.server_addr, payload, raw_end, 0);
        if (m != nullptr) {
            send_all(p, &m, 1);
        }
    }
    const lat_result r = summarise_latency(o.size, samples);
    print_lat_title();
    print_lat_row(r);
    print_dashes();
    if (!o.out_json.empty()) {
        write_json(o.out_json, o, run_info{}, {}, {r}, false, "skipped");
    }
    return 0;
}

} // namespace

int run_raw(dpdk::node& n, const options& o, const run_info& info)
{
    raw_port p;
    p.port = n.ports().front().port_id;
    p.mac = n.ports().front().mac;
    p.pool = dpdk::make_mbuf_pool("raw_pool", 4095, dpdk::node::max_frame(o.mtu), 0);
    // A bandwidth frame is a full transport data packet; a ping carries the
    // transport's headers plus the message, as a one-packet SEND would.
    const size_t bw_payload = wire::max_packet_len(o.mtu);
    const size_t lat_payload = std::max<size_t>(16, wire::data_header_len(wire::opcode::send) + o.size);
    print_header(o, info);
    if (o.is_bw()) {
        return o.client ? raw_bw_client(p, o, bw_payload, bw_payload + dpdk::k_frame_overhead)
                        : raw_bw_server(p, o, bw_payload + dpdk::k_frame_overhead);
    }
    return raw_lat(p, o, lat_payload);
}

} // namespace metaroce::perf
