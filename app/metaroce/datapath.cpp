#include "datapath.hpp"

#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "metaroce/wire/be.hpp"

namespace metaroce::app {

namespace {

constexpr uint32_t k_advert_magic = 0x4d524144; // "MRAD"
constexpr uint16_t k_ctrl_stream = 0;
constexpr uint16_t k_data_stream = 1;
constexpr uint32_t k_ctrl_conns = 32;           // connections that can run engines
constexpr uint32_t k_data_recvs = 64;           // receives kept posted per connection

// Each side advertises its region once a connection is up (a SEND on stream 0).
struct advert {
    wire::be32_t magic;
    wire::be32_t rkey;
    wire::be64_t va;
    wire::be64_t len;
    wire::be64_t reserved;
} __attribute__((packed));
static_assert(sizeof(advert) == 32);

enum class wr_kind : uint8_t { ctrl_recv = 1, ctrl_send, data, data_recv, user };
constexpr uint64_t k_seq_mask = (1ull << 40) - 1;
constexpr size_t k_user_cq_max = 4096; // completions "show cq" has not taken yet
uint64_t make_wr(wr_kind k, uint32_t slot, uint64_t seq)
{
    return uint64_t(k) << 56 | uint64_t(slot & 0xffff) << 40 | (seq & ((1ull << 40) - 1));
}

struct request {
    std::function<void()> fn;
    std::atomic<bool> done{false};
};

} // namespace

const char* engine_name(fwd_engine e) noexcept
{
    switch (e) {
    case fwd_engine::write_bw: return "write_bw";
    case fwd_engine::send_bw: return "send_bw";
    case fwd_engine::read_bw: return "read_bw";
    case fwd_engine::write_lat: return "write_lat";
    case fwd_engine::send_lat: return "send_lat";
    }
    return "?";
}

bool parse_engine(const std::string& s, fwd_engine& out) noexcept
{
    for (auto e : {fwd_engine::write_bw, fwd_engine::send_bw, fwd_engine::read_bw,
                   fwd_engine::write_lat, fwd_engine::send_lat}) {
        if (s == engine_name(e)) {
            out = e;
            return true;
        }
    }
    return false;
}

datapath::datapath(const app_config& cfg, const dpdk::plane_admin* admin) : cfg_(cfg)
{
    dpdk::node_params np;
    np.node_addr = cfg.address;
    np.ports = cfg.ports;
    np.transport = cfg.transport;
    np.accept_incoming = true;
    np.mbufs = cfg.mbufs;
    np.udp_csum_software = cfg.udp_checksum_software;
    np.neighbors = cfg.peers;
    np.gateways = cfg.gateways;
    np.admin = admin;
    np.max_connections = cfg.max_connections;
    node_ = std::make_unique<dpdk::node>(np);
    mailbox_ = rte_ring_create("mr_mailbox", 64, int(rte_socket_id()), RING_F_SC_DEQ);
    if (mailbox_ == nullptr) {
        throw dpdk::dpdk_error("cannot create the datapath mailbox ring");
    }
    const uint64_t len = std::max<uint64_t>(8ull << 20, 2 * cfg.message_size);
    region_ = dpdk::eal_buffer("mr_region", len, -1);
    auto& mem = node_->w().ep().memory();
    mr_ = *mem.register_region(region_.data(), len,
                               access::local_write | access::remote_write | access::remote_read);
    ctrl_ = dpdk::eal_buffer("mr_ctrl", 2 * k_ctrl_conns * sizeof(advert), -1);
    ctrl_mr_ = *mem.register_region(ctrl_.data(), ctrl_.size(), access::local_write);
    slots_ = uint32_t(std::clamp<uint64_t>(len / cfg.message_size, 1, 1024));
    for (uint64_t k = 0; k < len; ++k) {
        region_.data()[k] = uint8_t(k * 7 + (k >> 8) * 13 + 0x5a);
    }
}

datapath::~datapath()
{
    quit_and_wait();
    node_.reset();
    rte_ring_free(mailbox_);
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
    auto req = std::make_shared<request>();
    req->fn = std::move(fn);
    auto* handle = new std::shared_ptr<request>(req);
    if (rte_ring_mp_enqueue(mailbox_, handle) != 0) {
        delete handle;
        return false;
    }
    const uint64_t until = clk_.now_ns() + timeout_ms * 1'000'000ull;
    while (!req->done.load(std::memory_order_acquire)) {
        if (clk_.now_ns() > until) {
            return false; // the lcore still holds its reference and frees it later
        }
        std::this_thread::yield();
    }
    return true;
}

int datapath::loop_entry(void* self)
{
    return static_cast<datapath*>(self)->loop();
}

void datapath::drain_mailbox()
{
    void* p = nullptr;
    for (int i = 0; i < 4 && rte_ring_sc_dequeue(mailbox_, &p) == 0; ++i) {
        auto* handle = static_cast<std::shared_ptr<request>*>(p);
        (*handle)->fn();
        (*handle)->done.store(true, std::memory_order_release);
        delete handle;
    }
}

int datapath::loop()
{
    std::array<conn_event, 16> ev;
    std::array<completion, 64> cq;
    dpdk::worker& wk = node_->w();
    endpoint& ep = wk.ep();
    while (!quit_.load(std::memory_order_relaxed)) {
        const uint64_t now = clk_.now_ns();
        wk.poll(now);
        for (size_t n = ep.poll_events(ev), i = 0; i < n; ++i) {
            on_event(ev[i], now);
        }
        for (size_t n = ep.poll_cq(cq), i = 0; i < n; ++i) {
            on_completion(cq[i], now);
        }
        if (running_) {
            pump_engine(now);
        }
        drain_mailbox();
    }
    drain_mailbox();
    wk.flush();
    return 0;
}

void datapath::on_event(const conn_event& e, uint64_t now)
{
    if (e.what == conn_event::kind::established) {
        conn_up(e.conn, now);
    } else {
        conns_.erase(e.conn);
    }
}

void datapath::conn_up(conn_id c, uint64_t now)
{
    if (conns_.size() >= k_ctrl_conns) {
        return; // carried, but no engine on it
    }
    uint32_t slot = 0;
    std::vector<bool> used(k_ctrl_conns, false);
    for (const auto& [id, st] : conns_) {
        used[st.slot] = true;
    }
    while (slot < k_ctrl_conns && used[slot]) {
        ++slot;
    }
    conn_app st;
    st.slot = slot;
    conns_[c] = st;
    post_ctrl_recv(c, slot);
    for (uint64_t k = 0; k < k_data_recvs; ++k) {
        post_data_recv(c, k);
    }
    advert a{};
    a.magic = wire::be32_t::from_host(k_advert_magic);
    a.rkey = wire::be32_t::from_host(mr_.rkey);
    a.va = wire::be64_t::from_host(mr_.va);
    a.len = wire::be64_t::from_host(region_.size());
    const uint32_t send_slot = k_ctrl_conns + slot;
    std::memcpy(ctrl_.data() + send_slot * sizeof(advert), &a, sizeof a);
    send_wr wr;
    wr.wr_id = make_wr(wr_kind::ctrl_send, send_slot, 0);
    wr.op = wr_opcode::send;
    wr.stream = k_ctrl_stream;
    wr.local = sge{ctrl_mr_.va + send_slot * sizeof(advert), sizeof(advert), ctrl_mr_.lkey};
    node_->w().ep().post_send(c, wr, now);
}

void datapath::post_ctrl_recv(conn_id c, uint32_t slot)
{
    recv_wr wr;
    wr.wr_id = make_wr(wr_kind::ctrl_recv, slot, c);
    wr.local = sge{ctrl_mr_.va + slot * sizeof(advert), sizeof(advert), ctrl_mr_.lkey};
    node_->w().ep().post_recv(c, k_ctrl_stream, wr);
}

void datapath::post_data_recv(conn_id c, uint64_t seq)
{
    recv_wr wr;
    wr.wr_id = make_wr(wr_kind::data_recv, 0, c);
    const uint64_t off = (seq % slots_) * cfg_.message_size;
    wr.local = sge{mr_.va + off, uint32_t(cfg_.message_size), mr_.lkey};
    node_->w().ep().post_recv(c, k_data_stream, wr);
}

uint64_t datapath::user_wr_id(uint64_t id) noexcept
{
    return make_wr(wr_kind::user, 0, id);
}

std::vector<completion> datapath::take_user_completions()
{
    std::vector<completion> out;
    out.swap(user_cq_);
    return out;
}

void datapath::on_completion(const completion& c, uint64_t now)
{
    const auto kind = wr_kind(c.wr_id >> 56);
    if (kind == wr_kind::user) {
        // Posted from the prompt ("post send/recv"): kept, with its own wr_id, for "show cq".
        if (user_cq_.size() < k_user_cq_max) {
            completion u = c;
            u.wr_id = c.wr_id & k_seq_mask;
            user_cq_.push_back(u);
        }
        return;
    }
    auto it = conns_.find(c.conn);
    if (c.status != wc_status::success) {
        if (running_ && kind == wr_kind::data) {
            ++run_.errors;
        }
        if (it != conns_.end() && kind == wr_kind::data && it->second.outstanding > 0) {
            --it->second.outstanding;
        }
        return;
    }
    switch (kind) {
    case wr_kind::ctrl_recv: {
        const uint32_t slot = uint32_t(c.wr_id >> 40) & 0xffff;
        advert a;
        std::memcpy(&a, ctrl_.data() + slot * sizeof(advert), sizeof a);
        if (it != conns_.end() && a.magic.host() == k_advert_magic) {
            it->second.ready = true;
            it->second.peer_va = a.va.host();
            it->second.peer_rkey = a.rkey.host();
            it->second.peer_len = a.len.host();
            it->second.next = 0;
        }
        break;
    }
    case wr_kind::data_recv:
        if (it != conns_.end()) {
            post_data_recv(c.conn, 0);
        }
        break;
    case wr_kind::data:
        if (it != conns_.end()) {
            conn_app& st = it->second;
            if (st.outstanding > 0) {
                --st.outstanding;
            }
            if (running_) {
                ++run_.messages;
                run_.bytes += cfg_.message_size;
                const auto t = st.post_time.find(c.wr_id & ((1ull << 40) - 1));
                if (t != st.post_time.end()) {
                    const double us = double(now - t->second) / 2e3; // half round trip
                    run_.lat_min_us = run_.lat_samples == 0 ? us : std::min(run_.lat_min_us, us);
                    run_.lat_max_us = std::max(run_.lat_max_us, us);
                    run_.lat_sum_us += us;
                    ++run_.lat_samples;
                    st.post_time.erase(t);
                }
            }
        }
        break;
    case wr_kind::ctrl_send:
    case wr_kind::user: break;
    }
}

void datapath::pump_engine(uint64_t now)
{
    const bool lat = engine_ == fwd_engine::write_lat || engine_ == fwd_engine::send_lat;
    const uint32_t depth = lat ? 1 : cfg_.tx_depth;
    const uint64_t size = cfg_.message_size;
    endpoint& ep = node_->w().ep();
    for (auto& [id, st] : conns_) {
        if (!st.ready) {
            continue;
        }
        const uint64_t remote_slots = std::max<uint64_t>(1, std::min<uint64_t>(slots_, st.peer_len / size));
        while (st.outstanding < depth) {
            send_wr wr;
            const uint64_t seq = st.next;
            wr.wr_id = make_wr(wr_kind::data, 0, seq);
            wr.stream = k_data_stream;
            const uint64_t off = (seq % remote_slots) * size;
            wr.local = sge{mr_.va + off, uint32_t(size), mr_.lkey};
            switch (engine_) {
            case fwd_engine::write_bw:
            case fwd_engine::write_lat: wr.op = wr_opcode::write; break;
            case fwd_engine::read_bw: wr.op = wr_opcode::read; break;
            case fwd_engine::send_bw:
            case fwd_engine::send_lat: wr.op = wr_opcode::send; break;
            }
            wr.remote_va = st.peer_va + off;
            wr.rkey = st.peer_rkey;
            if (ep.post_send(id, wr, now) != post_result::ok) {
                break;
            }
            if (lat) {
                st.post_time[seq] = now;
            }
            ++st.outstanding;
            ++st.next;
        }
    }
}

void datapath::start(uint64_t now_ns)
{
    run_ = {};
    run_.engine = engine_;
    run_.start_ns = now_ns;
    running_ = true;
}

run_stats datapath::stop(uint64_t now_ns)
{
    running_ = false;
    run_.stop_ns = now_ns;
    return run_;
}

size_t datapath::peers_ready() const noexcept
{
    size_t n = 0;
    for (const auto& [id, st] : conns_) {
        n += st.ready;
    }
    return n;
}

} // namespace metaroce::app
