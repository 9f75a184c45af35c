#include "udp/node.hpp"

#include <sys/epoll.h>
#include <sys/random.h>
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/endpoint_loop.hpp"
#include "metaroce/wire/codec.hpp"
#include "udp/peer_map.hpp"
#include "udp/rx_batch.hpp"
#include "udp/sockets.hpp"
#include "udp/sport_pool.hpp"
#include "udp/tx_batch.hpp"

namespace metaroce::udp {

namespace {

constexpr size_t k_max_planes = 8;

uint64_t seed_from_os()
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != sizeof s) {
        throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    }
    return s | 1;
}

endpoint_config make_config(const node_params& p)
{
    if (p.plane_addrs.empty() || p.plane_addrs.size() > k_max_planes) {
        throw std::runtime_error("a UDP node needs 1.." + std::to_string(k_max_planes) +
                                 " plane addresses");
    }
    if (!(p.test_drop_rate >= 0 && p.test_drop_rate <= 1)) {
        throw std::runtime_error("test_drop_rate must be within 0..1");
    }
    if (p.sport_slots == 0 || p.sport_slots > wire::k_udp_sport_span) {
        throw std::runtime_error("sport_slots must be 1.." + std::to_string(wire::k_udp_sport_span));
    }
    if (p.rx_burst == 0 || p.tx_budget == 0) {
        throw std::runtime_error("rx_burst and tx_budget must be at least 1");
    }
    endpoint_config c;
    c.local_addr = p.plane_addrs[0];
    c.transport = p.transport;
    c.transport.planes = uint8_t(p.plane_addrs.size());
    c.accept_incoming = p.accept_incoming;
    c.seed = p.seed != 0 ? p.seed : seed_from_os();
    c.inbound_capacity_mbps = p.inbound_capacity_mbps;
    c.max_connections = p.max_connections;
    c.record_chunks = p.record_chunks;
    c.cq_depth = p.cq_depth;
    c.max_mrs = p.max_mrs;
    c.entropy_ports = p.sport_slots; // one socket per port: the core spreads over exactly these
    if (const std::string why = validate(c); !why.empty()) {
        throw std::runtime_error("UDP node configuration: " + why);
    }
    return c;
}

// splitmix64: the test-only loss injection, reproducible from its seed.
uint64_t next_random(uint64_t& s) noexcept
{
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

} // namespace

transport_config kernel_udp_transport()
{
    transport_config t;
    t.min_rto_ns = 5'000'000;
    t.max_rto_ns = t.min_rto_ns << t.max_backoff_shift; // room for the backoff (8x)
    t.min_probe_ns = 1'000'000;
    t.cc.delay_mark_ns = 5'000'000;
    return t;
}

namespace {

bool is_reply(wire::opcode op) noexcept
{
    switch (op) {
    case wire::opcode::ack:
    case wire::opcode::nak:
    case wire::opcode::accept:
    case wire::opcode::cookie:
    case wire::opcode::close_ack:
    case wire::opcode::probe_ack: return true;
    default: return false;
    }
}

} // namespace

struct node::impl {
    struct plane {
        uint32_t addr = 0;
        unique_fd rx;
        std::unique_ptr<sport_pool> tx;       // data: path entropy folded into sport_slots sockets
        std::unique_ptr<sport_pool> replies;  // everything else: exactly the port the core names
        uint32_t kernel_drops = 0; // last SO_RXQ_OVFL value seen
    };

    node_params params;
    endpoint ep;
    udp_counters ctr;
    peer_map peers;
    std::vector<plane> planes;
    unique_fd epfd;
    rx_batch rxb;
    tx_batch txb;
    size_t max_len;          // the largest packet the core builds for our mtu
    uint64_t drop_state;
    uint64_t drop_threshold; // a datagram is dropped when a 64-bit draw is below it

    explicit impl(const node_params& p)
        : params(p),
          ep(make_config(p)),
          peers(p.plane_addrs, p.peers),
          rxb(p.rx_burst, wire::max_packet_len(p.transport.mtu), p.gro),
          txb(p.tx_budget, wire::max_packet_len(p.transport.mtu), p.gso),
          max_len(wire::max_packet_len(p.transport.mtu)),
          drop_state(p.test_drop_seed),
          drop_threshold(p.test_drop_rate >= 1 ? UINT64_MAX
                                               : uint64_t(p.test_drop_rate * 18446744073709551616.0))
    {
        epfd = unique_fd(epoll_create1(EPOLL_CLOEXEC));
        if (epfd.get() < 0) {
            throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
        }
        planes.resize(p.plane_addrs.size());
        for (size_t i = 0; i < planes.size(); ++i) {
            plane& pl = planes[i];
            pl.addr = p.plane_addrs[i];
            pl.rx = unique_fd(open_bound(pl.addr, p.port, p.socket_buffer_bytes));
            enable_rx_meta(pl.rx.get());
            if (p.gro && !enable_gro(pl.rx.get())) {
                throw std::runtime_error("UDP_GRO is not supported by this kernel: set gro = false");
            }
            pl.tx = std::make_unique<sport_pool>(pl.addr, p.sport_slots, p.socket_buffer_bytes, p.port);
            pl.replies = std::make_unique<sport_pool>(pl.addr, wire::k_udp_sport_span, p.socket_buffer_bytes, p.port);
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u32 = uint32_t(i);
            if (epoll_ctl(epfd.get(), EPOLL_CTL_ADD, pl.rx.get(), &ev) != 0) {
                throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
            }
        }
    }

    // ---- the packet I/O of the shared loop (common/endpoint_loop.hpp) ----

    bool rx_burst(const io::deliver_to<endpoint>& deliver, uint64_t)
    {
        bool any = false;
        for (size_t p = 0; p < planes.size(); ++p) {
            plane& pl = planes[p];
            uint32_t drops = pl.kernel_drops;
            const size_t n = rxb.recv(pl.rx.get(), drops);
            if (n == 0) {
                continue;
            }
            any = true;
            ++ctr.rx_syscalls;
            ctr.rx_kernel_drops += drops - pl.kernel_drops;
            pl.kernel_drops = drops;
            for (size_t i = 0; i < n; ++i) {
                const rx_datagram d = rxb.at(i);
                if (d.truncated) {
                    ++ctr.rx_malformed;
                    continue;
                }
                if (d.seg_size == 0) {
                    rx_one(d, d.bytes, uint8_t(p), deliver);
                    continue;
                }
                ++ctr.rx_gro_runs;
                for (size_t off = 0; off < d.bytes.size(); off += d.seg_size) {
                    rx_one(d, d.bytes.subspan(off, std::min<size_t>(d.seg_size, d.bytes.size() - off)),
                           uint8_t(p), deliver);
                }
            }
        }
        return any;
    }

    void rx_one(const rx_datagram& d, std::span<const uint8_t> bytes, uint8_t plane,
                const io::deliver_to<endpoint>& deliver)
    {
        // A datagram too short for a header reaches the core, which counts it by reason
        // (rx_malformed.too_short) as it does from any driver; one longer than any packet
        // was truncated by the receive buffer and is the backend's to count.
        if (bytes.size() > max_len) {
            ++ctr.rx_malformed;
            return;
        }
        if (drop_threshold != 0 && next_random(drop_state) < drop_threshold) {
            ++ctr.rx_injected_drops;
            return;
        }
        ++ctr.rx_datagrams;
        ++ctr.rx_plane_datagrams[plane];
        ctr.rx_bytes += bytes.size();
        ctr.rx_ce += d.ce ? 1 : 0;
        const rx_meta m{peers.node_of(d.src_ip, plane), plane, d.src_port, d.ce};
        deliver(m, bytes);
    }

    std::span<uint8_t> tx_buffer(uint64_t) noexcept { return txb.next_buffer(); }
    void tx_unused() noexcept {}

    io::tx_next tx_send(const tx_frame& f, uint64_t) noexcept
    {
        if (f.plane >= planes.size() || f.len == 0 || f.len > f.buf.size()) {
            ++ctr.tx_bad_frame;
            return io::tx_next::more;
        }
        // Replies (ACK, NAK, ACCEPT, COOKIE, CLOSE_ACK, PROBE_ACK) leave from exactly the
        // port the data or request came from (spec 5.7, 7.6: the reverse path hashes
        // alike); a peer's ports are few (its paths), so reply sockets stay few. What we
        // originate on a path (data, PROBE, CONNECT, CLOSE) is folded, so a PROBE tests
        // the route the path's data takes.
        // A port inside the folded range is the data pool's own socket (one socket per
        // port: a second bind of it would fail and move the reply elsewhere).
        sport_pool& data = *planes[f.plane].tx;
        const bool exact_elsewhere = is_reply(wire::opcode(f.buf[1])) &&
                                     uint16_t(f.udp_sport - wire::k_udp_sport_min) >= data.slots();
        sport_pool& pool = exact_elsewhere ? *planes[f.plane].replies : data;
        const int fd = pool.fd_for(f.udp_sport, ctr);
        if (fd < 0) {
            ++ctr.tx_errors;
            return io::tx_next::more;
        }
        txb.commit(fd, peers.plane_ip(f.dst_addr, f.plane), params.port, f.len, f.ect);
        if (txb.full() && txb.flush(ctr) != 0) {
            return io::tx_next::stop; // a socket buffer is full: leave the rest in the core
        }
        return io::tx_next::more;
    }

    bool tx_backlog(uint64_t) noexcept { return txb.queued() != 0 && txb.flush(ctr) != 0; }
    void tx_flush(uint64_t) noexcept
    {
        if (txb.queued() != 0) {
            txb.flush(ctr);
        }
    }
};

node::node(const node_params& p) : impl_(std::make_unique<impl>(p)) {}
node::~node() = default;

endpoint& node::ep() noexcept { return impl_->ep; }
const endpoint& node::ep() const noexcept { return impl_->ep; }
const node_params& node::params() const noexcept { return impl_->params; }
const udp_counters& node::counters() const noexcept { return impl_->ctr; }
void node::clear_counters() noexcept
{
    const uint64_t sockets = impl_->ctr.sport_sockets;
    const uint64_t moved = impl_->ctr.sport_moved;
    impl_->ctr = {};
    impl_->ctr.sport_sockets = sockets; // a gauge, not a rate
    impl_->ctr.sport_moved = moved;
}
int node::wait_fd() const noexcept { return impl_->epfd.get(); }

bool node::poll(uint64_t now_ns)
{
    impl& m = *impl_;
    ++m.ctr.loops;
    const io::poll_result r = io::poll_once(m.ep, m, now_ns, m.params.tx_budget);
    if (r.busy()) {
        ++m.ctr.busy_loops;
    }
    return r.busy();
}

void node::wait(uint64_t max_ns)
{
    if (impl_->txb.queued() != 0) {
        return; // datagrams wait for room in a socket buffer: keep polling
    }
    const uint64_t now = now_ns();
    const uint64_t next = impl_->ep.next_timer();
    const uint64_t until_timer = next <= now ? 0 : next - now;
    const uint64_t t = std::min(max_ns, until_timer);
    if (t == 0) {
        return;
    }
    pollfd pfd{wait_fd(), POLLIN, 0};
    const timespec ts{time_t(t / 1'000'000'000), long(t % 1'000'000'000)};
    (void)ppoll(&pfd, 1, &ts, nullptr); // EINTR or timeout: the caller polls either way
}

uint64_t node::now_ns() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

} // namespace metaroce::udp
