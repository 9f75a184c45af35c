#include "udp_dp_io.hpp"

#include <algorithm>


#include "dpdk/eal.hpp"
#include "dpdk/port.hpp"
#include "udp/idle_poller.hpp"
#include "udp/node.hpp"

namespace metaroce::app {

namespace {

// Busy-polls while there is work, then sleeps on the sockets until a datagram or the
// next timer, at most 1 ms so the mailbox (the prompt's commands) stays responsive.
// Spinning without end on a shared host delays the peer's ACKs into spurious RTOs.
class udp_dp_io final : public dp_io {
public:
    explicit udp_dp_io(const udp::node_params& np) : n_(np), poller_(n_)
    {
        for (size_t p = 0; p < np.plane_addrs.size(); ++p) {
            dpdk::port_caps c;
            c.port_id = uint16_t(p);
            c.name = "udp:" + dpdk::format_ipv4(np.plane_addrs[p]);
            c.driver = "udp";
            caps_.push_back(c);
        }
    }
    endpoint& ep() noexcept override { return n_.ep(); }
    void poll(uint64_t now_ns) override { poller_.poll(now_ns); }
    void flush() noexcept override
    {
        // The node sends as it polls; a few passes hand the kernel what is queued.
        for (int i = 0; i < 16 && n_.poll(clk_.now_ns()); ++i) {
        }
    }
    dpdk::worker_counters counters() override
    {
        const udp::udp_counters& u = n_.counters();
        dpdk::worker_counters w;
        w.loops = u.loops;
        w.busy_loops = u.busy_loops;
        w.rx_frames = u.rx_datagrams;
        w.rx_bytes = u.rx_bytes;
        w.tx_frames = u.tx_datagrams;
        w.tx_bytes = u.tx_bytes;
        w.tx_bad_frame = u.tx_bad_frame + u.tx_errors;
        w.tx_queue_full = u.tx_would_block;
        for (size_t p = 0; p < w.plane_rx_frames.size() && p < u.rx_plane_datagrams.size(); ++p) {
            w.plane_rx_frames[p] = u.rx_plane_datagrams[p];
        }
        return w;
    }
    void clear_counters() noexcept override { n_.clear_counters(); }
    const std::vector<dpdk::port_caps>& ports() const noexcept override { return caps_; }

private:
    udp::node n_;
    udp::idle_poller poller_; // the endpoint's timers run on the datapath's clock
    std::vector<dpdk::port_caps> caps_;
    dpdk::tsc_clock clk_; // the datapath's clock: the endpoint's timers run on it
};

} // namespace

transport_config udp_transport(transport_config t)
{
    // A process behind a socket can be descheduled for milliseconds: keep the RTO and
    // delay mark above what kernel sockets need (the DPDK-tuned values read that as
    // loss and congestion). 20 ms as metaroce-perf's udp backend, measured there.
    const transport_config k = udp::kernel_udp_transport();
    t.min_rto_ns = std::max<uint64_t>({t.min_rto_ns, k.min_rto_ns, 20'000'000});
    t.max_rto_ns = std::max(t.max_rto_ns, t.min_rto_ns << t.max_backoff_shift); // room to back off
    t.cc.delay_mark_ns = std::max(t.cc.delay_mark_ns, k.cc.delay_mark_ns);
    return t;
}

std::unique_ptr<dp_io> make_udp_dp_io(const app_config& cfg)
{
    udp::node_params np;
    for (size_t p = 0; p < cfg.ports.size(); ++p) {
        np.plane_addrs.push_back(dpdk::plane_ip(cfg.address, uint8_t(p)));
    }
    np.port = cfg.udp_port;
    np.transport = cfg.transport; // already through udp_transport() (main)
    np.accept_incoming = true;
    np.max_connections = cfg.max_connections;
    np.record_chunks = cfg.record_chunks;
    return std::make_unique<udp_dp_io>(np);
}

} // namespace metaroce::app
