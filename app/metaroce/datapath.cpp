#include "datapath.hpp"

#include <rte_launch.h>

#include <array>

#include "engines/wr_tag.hpp"
#include "udp_dp_io.hpp"

namespace metaroce::app {

namespace {
constexpr size_t k_user_cq_max = 4096; // completions "show cq" has not taken yet
} // namespace

std::vector<std::unique_ptr<datapath>> datapath::make_lanes(const app_config& cfg, const dpdk::plane_admin* admin,
                                                            size_t workers)
{
    std::vector<std::unique_ptr<datapath>> lanes;
    if (cfg.udp) {
        lanes.push_back(std::make_unique<datapath>(make_udp_dp_io(cfg), cfg, 0));
        return lanes;
    }
    dpdk::node_params np;
    np.node_addr = cfg.address;
    np.ports = cfg.ports;
    np.transport = cfg.transport;
    np.accept_incoming = true;
    np.mbufs = cfg.mbufs;
    np.udp_csum_software = cfg.udp_checksum_software;
    np.tx_copy = cfg.tx_copy;
    np.neighbors = cfg.peers;
    np.gateways = cfg.gateways;
    np.admin = admin;
    np.max_connections = cfg.max_connections;
    np.record_chunks = cfg.record_chunks;
    np.inbound_capacity_mbps = cfg.inbound_capacity_mbps;
    np.workers = uint16_t(workers);
    auto node = std::make_shared<dpdk::node>(np);
    for (size_t k = 0; k < workers; ++k) {
        auto io = std::make_unique<dpdk_dp_io>(node, k);
        io->yield_when_idle(cfg.yield_idle);
        auto lane = std::make_unique<datapath>(std::move(io), cfg, k);
        lane->host_->send_in_place(lane->io_.get());
        lanes.push_back(std::move(lane));
    }
    return lanes;
}

datapath::datapath(std::unique_ptr<dp_io> io, const app_config& cfg, size_t index)
    : io_(std::move(io)), index_(index)
{
    host_ = std::make_unique<engine_host>(io_->ep(), cfg);
}

datapath::~datapath()
{
    quit_and_wait();
    host_.reset();
    io_.reset();
}

void datapath::launch(unsigned lcore)
{
    lcore_ = lcore;
    if (rte_eal_remote_launch(&datapath::loop_entry, this, lcore) != 0) {
        throw dpdk::dpdk_error("cannot launch the datapath on lcore " + std::to_string(lcore));
    }
    launched_ = true;
}

void datapath::quit_and_wait()
{
    if (launched_) {
        quit_.store(true);
        rte_eal_wait_lcore(lcore_);
        launched_ = false;
    }
}

bool datapath::call(std::function<void()> fn, uint64_t timeout_ms)
{
    if (!launched_) {
        fn(); // not running: the caller owns the endpoint
        return true;
    }
    return mailbox_.call(std::move(fn), timeout_ms);
}

int datapath::loop_entry(void* self)
{
    return static_cast<datapath*>(self)->loop();
}

int datapath::loop()
{
    std::array<conn_event, 16> ev;
    std::array<completion, 64> cq;
    dp_io& io = *io_;
    endpoint& ep = io.ep();
    while (!quit_.load(std::memory_order_relaxed)) {
        const uint64_t now = clk_.now_ns();
        io.poll_held(now);
        for (size_t n = ep.poll_events(ev), i = 0; i < n; ++i) {
            host_->on_event(ev[i], now);
        }
        if (const size_t n = ep.poll_cq(cq); n != 0) {
            // A fresh time: latency engines stamp the echoes they receive with it.
            const uint64_t at = clk_.now_ns();
            for (size_t i = 0; i < n; ++i) {
                on_completion(cq[i], at);
            }
        }
        const uint64_t pumped = clk_.now_ns();
        host_->pump(pumped);
        io.send_held(pumped);
        mailbox_.drain();
    }
    mailbox_.drain();
    io.flush();
    return 0;
}

void datapath::on_completion(const completion& c, uint64_t now_ns)
{
    const engines::wr_tag tag = engines::wr_tag::of(c.wr_id);
    if (tag.kind != engines::wr_kind::user) {
        host_->on_completion(c, now_ns);
        return;
    }
    // Posted from the prompt ("post send/recv"): kept, with its own wr_id, for "show cq".
    if (user_cq_.size() < k_user_cq_max) {
        completion u = c;
        u.wr_id = tag.seq;
        user_cq_.push_back(u);
    }
}

uint64_t datapath::user_wr_id(uint64_t id) noexcept
{
    return engines::wr_tag{engines::wr_kind::user, 0, id}.id();
}

std::vector<completion> datapath::take_user_completions()
{
    std::vector<completion> out;
    out.swap(user_cq_);
    return out;
}

} // namespace metaroce::app
