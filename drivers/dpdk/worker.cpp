#include "dpdk/worker.hpp"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_cycles.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "dpdk/eal.hpp"
#include "dpdk/link_guard.hpp"
#include "metaroce/wire/headers.hpp"

namespace metaroce::dpdk {

namespace {
std::vector<uint16_t> port_ids(const worker_config& cfg)
{
    std::vector<uint16_t> ids;
    for (const plane_port& p : cfg.planes) {
        ids.push_back(p.port_id);
    }
    return ids;
}
} // namespace

worker::worker(const worker_config& cfg) : cfg_(cfg), ep_(cfg.ep), ext_(port_ids(cfg))
{
    if (cfg_.planes.empty() || cfg_.planes.size() > k_max_planes) {
        throw dpdk_error("a worker needs 1.." + std::to_string(k_max_planes) + " planes");
    }
    if (cfg_.pool == nullptr) {
        throw dpdk_error("a worker needs an mbuf pool");
    }
    plane_of_port_.fill(-1);
    for (size_t p = 0; p < cfg_.planes.size(); ++p) {
        const uint16_t port = cfg_.planes[p].port_id;
        if (port >= plane_of_port_.size()) {
            throw dpdk_error("port id " + std::to_string(port) + " out of range");
        }
        plane_of_port_[port] = int16_t(p);
    }
    for (const auto& n : cfg_.neighbors) {
        if (n.plane < cfg_.planes.size()) {
            neigh_[n.plane].set(n.node, n.mac, true);
        }
    }
    detected_up_.fill(true);
    admin_up_.fill(true);
    zero_copy_ = cfg_.tx_zero_copy;
    for (const plane_port& p : cfg_.planes) {
        zero_copy_ = zero_copy_ && p.multi_seg && !p.tx_csum.udp_software;
    }
}

worker::~worker()
{
    flush();
    for (auto& q : txq_) {
        rte_pktmbuf_free_bulk(q.pkts.data(), q.n);
        q.n = 0;
    }
    rte_pktmbuf_free_bulk(spare_.data(), spare_n_);
    for (uint16_t i = 0; i < later_n_; ++i) {
        rte_pktmbuf_free(later_[i].m);
    }
}

bool worker::plane_up(uint8_t plane) const noexcept
{
    return cfg_.admin == nullptr || cfg_.admin->up[plane].load(std::memory_order_relaxed);
}

bool worker::poll(uint64_t now_ns, bool flush)
{
    ++ctr_.loops;
    if (last_poll_ns_ != 0 && now_ns > last_poll_ns_) {
        ctr_.max_poll_gap_ns = std::max(ctr_.max_poll_gap_ns, now_ns - last_poll_ns_);
    }
    last_poll_ns_ = now_ns;
    // Bursts only while memif's peer handling is held off (link_guard.hpp).
    const link_guard::section io_ok;
    if (!io_ok) {
        return false;
    }
    holding_ = !flush;
    const io::poll_result r = io::poll_once(ep_, *this, now_ns, cfg_.tx_budget, flush);
    if (holding_) {
        held_busy_ = r.busy(); // the pass is counted once, by send_held
        return r.busy();
    }
    count_pass(r);
    return r.busy();
}

void worker::count_pass(const io::poll_result& r) noexcept
{
    if (r.timers) {
        ++ctr_.timer_calls;
    }
    if (r.busy()) {
        ++ctr_.busy_loops;
    }
}

bool worker::send_held(uint64_t now_ns)
{
    holding_ = false;
    const bool polled = held_busy_;
    held_busy_ = false;
    const link_guard::section io_ok;
    if (!io_ok) {
        take_later_acks(now_ns); // their frames go out with the next pass
        return polled;
    }
    // The reply first, alone in its burst; then the ACKs that arrived (after_reply), the
    // timers and the rest.
    io::poll_result r = io::send_held(ep_, *this, now_ns, cfg_.tx_budget);
    r.rx |= polled;
    count_pass(r);
    return r.busy();
}

// The ACKs a held pass set aside, taken in now that the program has answered.
bool worker::take_later_acks(uint64_t now_ns)
{
    const uint16_t n = later_n_;
    later_n_ = 0;
    for (uint16_t i = 0; i < n; ++i) {
        const uint64_t t_place = stage_times::begin();
        ep_.on_packet(later_[i].meta, later_[i].bytes, now_ns);
        stages_.end(stage::placement, t_place);
        rte_pktmbuf_free(later_[i].m);
    }
    return n != 0;
}

bool worker::rx_burst(const io::deliver_to<endpoint>& deliver, uint64_t)
{
    bool busy = false;
    if (cfg_.poll_rx) {
        for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
            busy |= rx_plane(p, deliver);
        }
    }
    if (cfg_.inbox != nullptr) {
        busy |= rx_inbox(deliver);
    }
    return busy;
}

void worker::watch_planes()
{
    for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
        const bool up = plane_up(p);
        if (up != admin_up_[p]) {
            admin_up_[p] = up;
            plane_changed(p, up, plane_cause::admin);
        }
    }
    const metaroce::counters& s = ep_.stats();
    const uint64_t changes = s.plane_downs + s.plane_ups;
    if (changes == plane_changes_seen_) {
        return;
    }
    plane_changes_seen_ = changes;
    for (const plane_info& pi : ep_.planes()) { // allocates: only on a change
        if (pi.plane < cfg_.planes.size() && pi.detected_up != detected_up_[pi.plane]) {
            detected_up_[pi.plane] = pi.detected_up;
            plane_changed(pi.plane, pi.detected_up, plane_cause::detected);
        }
    }
}

void worker::plane_changed(uint8_t plane, bool up, plane_cause why) noexcept
{
    plane_event e;
    e.t_ns = clk_.now_ns();
    e.plane = plane;
    e.up = up;
    e.cause = why;
    e.tx_at = ctr_.plane_tx_frames;
    e.rx_at = ctr_.plane_rx_frames;
    e.last_tx_ns = last_tx_ns_;
    log_.record(e);
}

bool worker::rx_plane(uint8_t plane, const io::deliver_to<endpoint>& deliver)
{
    std::array<rte_mbuf*, k_burst> pkts;
    const uint64_t t0 = stage_times::begin();
    const uint16_t n =
        rte_eth_rx_burst(cfg_.planes[plane].port_id, cfg_.queue, pkts.data(), k_burst);
    if (n == 0) {
        return false;
    }
    stages_.end(stage::rx_burst, t0, n); // bursts with frames: empty polls are the idle loop
    if (!plane_up(plane)) {
        ctr_.rx_plane_down += n;
        rte_pktmbuf_free_bulk(pkts.data(), n);
        return true;
    }
    for (uint16_t i = 0; i < n; ++i) {
        if (i + 1 < n) {
            rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
        }
        // Counted by the worker that took it off its queue, once: a frame handed on to
        // its owner counts there as handoff_in only (summed over workers, rx_frames is
        // what the ports delivered).
        ++ctr_.rx_frames;
        ++ctr_.plane_rx_frames[plane];
        ctr_.rx_bytes += pkts[i]->pkt_len;
        rx_frame(pkts[i], plane, deliver);
    }
    return true;
}

bool worker::rx_inbox(const io::deliver_to<endpoint>& deliver)
{
    std::array<rte_mbuf*, k_burst> pkts;
    const unsigned n = rte_ring_sc_dequeue_burst(cfg_.inbox, reinterpret_cast<void**>(pkts.data()),
                                                 k_burst, nullptr);
    for (unsigned i = 0; i < n; ++i) {
        ++ctr_.handoff_in;
        const uint16_t port = pkts[i]->port;
        const int16_t plane = port < plane_of_port_.size() ? plane_of_port_[port] : int16_t(-1);
        if (plane < 0) {
            rte_pktmbuf_free(pkts[i]);
            continue;
        }
        rx_frame(pkts[i], uint8_t(plane), deliver);
    }
    return n != 0;
}

// Consumes the mbuf: frees it, or passes it to the worker that owns its address.
void worker::rx_frame(rte_mbuf* m, uint8_t plane, const io::deliver_to<endpoint>& deliver)
{
    const uint64_t t_parse = stage_times::begin();
    // The core copies the payload into its region straight from the mbuf: that is the
    // only copy. Our pool's mbufs hold a whole frame, so a chain means a port whose
    // buffers are smaller than the MTU's frames (counted, not copied again to read it).
    if (m->nb_segs != 1) {
        ++ctr_.rx_multi_seg;
        rte_pktmbuf_free(m);
        return;
    }
    const std::span<const uint8_t> bytes{rte_pktmbuf_mtod(m, const uint8_t*), m->data_len};
    const plane_port& pp = cfg_.planes[plane];
    rx_csum_state hw;
    if (pp.rx_ip_csum) {
        const uint64_t f = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
        if (f == RTE_MBUF_F_RX_IP_CKSUM_BAD) {
            ++ctr_.rx_drops[size_t(rx_drop::bad_ip_checksum)];
            rte_pktmbuf_free(m);
            return;
        }
        hw.ip_good = f == RTE_MBUF_F_RX_IP_CKSUM_GOOD;
    }
    if (pp.rx_udp_csum) {
        const uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
        if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD) {
            ++ctr_.rx_drops[size_t(rx_drop::bad_udp_checksum)];
            rte_pktmbuf_free(m);
            return;
        }
        hw.udp_good = f == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
    }
    const rx_result r = parse_frame(bytes, wire::k_udp_dst_port, hw);
    if (r.drop != rx_drop::none) {
        ++ctr_.rx_drops[size_t(r.drop)];
        rte_pktmbuf_free(m);
        return;
    }
    const uint32_t dst_node = node_of(r.pkt.dst_ip, plane);
    if (dst_node != node()) {
        for (const auto& s : cfg_.steering) {
            if (s.node == dst_node) {
                // The owner reads the plane from the port: not every PMD sets it on
                // receive (net_ring passes the sender's mbuf, port RTE_MBUF_PORT_INVALID).
                m->port = pp.port_id;
                if (rte_ring_mp_enqueue(s.inbox, m) == 0) {
                    ++ctr_.handoff_out;
                } else {
                    ++ctr_.handoff_drops;
                    rte_pktmbuf_free(m);
                }
                return;
            }
        }
        ++ctr_.rx_not_ours;
        rte_pktmbuf_free(m);
        return;
    }
    const uint32_t src_node = node_of(r.pkt.src_ip, plane);
    neigh_[plane].learn(src_node, r.pkt.src_mac);
    const rx_meta meta{src_node, plane, r.pkt.udp_sport, r.pkt.ce};
    stages_.end(stage::parse, t_parse);
    // BTH byte 1 is the opcode (wire/headers.hpp). An ACK in a held pass waits until the
    // program has answered (send_held): it settles what we sent, so nothing the program
    // answers now depends on it, and the reply is not built behind its processing.
    if (holding_ && later_n_ < later_.size() && r.pkt.payload.size() > 1 &&
        r.pkt.payload[1] == uint8_t(wire::opcode::ack)) {
        later_[later_n_++] = {m, meta, r.pkt.payload};
        return;
    }
    const uint64_t t_place = stage_times::begin();
    deliver(meta, r.pkt.payload);
    stages_.end(stage::placement, t_place);
    rte_pktmbuf_free(m);
}

bool worker::port_stalled(uint8_t plane, uint64_t now_ns) const noexcept
{
    return stalled_since_[plane] != 0 && now_ns - stalled_since_[plane] >= k_port_stall_ns;
}

rte_mbuf* worker::tx_alloc() noexcept
{
    if (spare_n_ == 0) {
        if (rte_pktmbuf_alloc_bulk(cfg_.pool, spare_.data(), k_burst) != 0) {
            ++ctr_.tx_no_mbuf;
            return nullptr;
        }
        spare_n_ = k_burst;
    }
    return spare_[--spare_n_];
}

// Retry what the ports did not take; while the queues are backed up, leave packets in
// the core (its windows and pacing decide, nothing is dropped). One backed-up port
// does not stop the pulls while another plane's has room: the core is told which
// planes to avoid (tx_busy_planes, spec 5.3), so the others' paced connections do not
// fall behind with it. A queue past k_queue_stop (the core found room only there) stops
// them too, so it never overflows. A port that has taken nothing for k_port_stall_ns is
// stalled (net_af_packet on a link without carrier refuses everything): it must not
// hold up the other planes, so its packets are dropped as on a dead link and the
// transport's loss recovery and plane detection take over.
bool worker::tx_backlog(uint64_t now_ns)
{
    for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
        if (txq_[p].n != 0) {
            flush_plane(p);
        }
    }
    return tx_must_stop(now_ns);
}

bool worker::plane_backed_up(uint8_t plane, uint64_t now_ns) const noexcept
{
    return txq_[plane].n >= k_burst && !port_stalled(plane, now_ns);
}

uint32_t worker::tx_busy_planes(uint64_t) const noexcept
{
    uint32_t busy = 0;
    for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
        busy |= uint32_t(txq_[p].n >= k_burst) << p;
    }
    return busy;
}

bool worker::tx_must_stop(uint64_t now_ns) const noexcept
{
    bool all = true;
    for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
        const bool backed_up = plane_backed_up(p, now_ns);
        if (backed_up && txq_[p].n >= k_queue_stop) {
            return true;
        }
        all &= backed_up;
    }
    return all;
}

std::span<uint8_t> worker::tx_buffer(uint64_t) noexcept
{
    tx_cur_ = tx_alloc();
    if (tx_cur_ == nullptr) {
        return {};
    }
    uint8_t* frame = rte_pktmbuf_mtod(tx_cur_, uint8_t*);
    const size_t room = rte_pktmbuf_tailroom(tx_cur_);
    return {frame + k_frame_overhead, room - k_frame_overhead};
}

void worker::tx_unused() noexcept
{
    spare_[spare_n_++] = tx_cur_;
    tx_cur_ = nullptr;
}

io::tx_next worker::tx_send(const tx_frame& f, uint64_t now_ns) noexcept
{
    rte_mbuf* m = tx_cur_;
    tx_cur_ = nullptr;
    if (f.plane >= cfg_.planes.size() || f.len == 0 || f.len > f.buf.size()) {
        ++ctr_.tx_bad_frame;
        rte_pktmbuf_free(m);
        return io::tx_next::more;
    }
    if (!plane_up(f.plane)) {
        ++ctr_.tx_plane_down;
        rte_pktmbuf_free(m);
        return io::tx_next::more;
    }
    uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);
    const plane_port& pp = cfg_.planes[f.plane];
    tx_addressing a;
    a.src_mac = pp.mac;
    a.dst_mac = pp.routed ? pp.gateway : neigh_[f.plane].lookup(f.dst_addr);
    a.src_ip = plane_ip(node(), f.plane);
    a.dst_ip = plane_ip(f.dst_addr, f.plane);
    a.udp_sport = f.udp_sport;
    a.udp_dport = wire::k_udp_dst_port;
    a.ect = f.ect;
    const size_t len = write_headers(frame, a, f.wire_len(), pp.tx_csum);
    m->data_len = uint16_t(len - f.payload_len);
    m->pkt_len = uint32_t(len);
    if (f.payload_refs != 0 && !chain_payload(m, f)) {
        ++ctr_.tx_no_mbuf;
        rte_pktmbuf_free(m);
        return io::tx_next::more;
    }
    if (pp.tx_csum.ip_offload || pp.tx_csum.udp_offload) {
        m->l2_len = k_l2_len;
        m->l3_len = k_l3_len;
        m->ol_flags |= RTE_MBUF_F_TX_IPV4;
        if (pp.tx_csum.ip_offload) {
            m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
        }
        if (pp.tx_csum.udp_offload) {
            m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM;
        }
    }
    tx_queue& q = txq_[f.plane];
    if (q.n == q.pkts.size()) { // only a stalled port's queue fills up
        ++ctr_.tx_port_stalled;
        rte_pktmbuf_free(m);
        return io::tx_next::more;
    }
    q.pkts[q.n++] = m;
    if (q.n >= k_burst) {
        flush_plane(f.plane);
        if (plane_backed_up(f.plane, now_ns) && tx_must_stop(now_ns)) {
            return io::tx_next::stop; // no port has room: stop pulling
        }
    }
    return io::tx_next::more;
}

// The payload pieces of a zero-copy frame after m's headers: chained in place when
// every piece lies in memory registered here for this plane's port and the payload is
// not short, else copied behind the headers (the buffer the core had was sized for the
// whole frame).
bool worker::chain_payload(rte_mbuf* m, const tx_frame& f) noexcept
{
    const size_t port = f.plane;
    const bool small = f.payload_len < cfg_.tx_copy_below;
    bool in_place = !small;
    for (size_t i = 0; i < f.payload_refs && in_place; ++i) {
        in_place = ext_.covers(f.payload[i].host, f.payload[i].len, port);
    }
    ctr_.tx_iova_lookups = ext_.iova_lookups();
    if (!in_place) {
        uint8_t* at = rte_pktmbuf_mtod_offset(m, uint8_t*, m->data_len);
        for (size_t i = 0; i < f.payload_refs; ++i) {
            std::memcpy(at, f.payload[i].host, f.payload[i].len);
            at += f.payload[i].len;
        }
        m->data_len = uint16_t(m->data_len + f.payload_len);
        ++(small ? ctr_.tx_payload_inlined : ctr_.tx_payload_copied);
        return true;
    }
    rte_mbuf* tail = m;
    for (size_t i = 0; i < f.payload_refs; ++i) {
        rte_mbuf* seg = tx_alloc();
        if (seg == nullptr) {
            return false; // the caller frees the chain built so far
        }
        if (!ext_.attach(seg, f.payload[i].host, f.payload[i].len, port)) {
            rte_pktmbuf_free(seg); // covers() said it would: never, but not a short frame
            return false;
        }
        tail->next = seg;
        tail = seg;
        ++m->nb_segs;
    }
    ++ctr_.tx_zero_copy;
    return true;
}

const extbuf_regions::region& worker::tx_register(const void* base, size_t len)
{
    return ext_.add(base, len);
}

uint32_t worker::tx_in_flight(const void* base) const noexcept
{
    const extbuf_regions::region* r = ext_.find(base);
    return r == nullptr ? 0 : r->in_flight();
}

void worker::tx_deregister(const void* base, uint64_t timeout_ns)
{
    const uint64_t until = clk_.now_ns() + timeout_ns;
    while (tx_in_flight(base) != 0) {
        {
            // Frames still queued here go out; a NIC frees what it sent on cleanup.
            const link_guard::section io_ok(link_guard::section::wait);
            for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
                if (txq_[p].n != 0) {
                    flush_plane(p);
                }
                rte_eth_tx_done_cleanup(cfg_.planes[p].port_id, cfg_.queue, 0);
            }
        }
        if (tx_in_flight(base) == 0) {
            break;
        }
        if (clk_.now_ns() >= until) {
            char at[32];
            std::snprintf(at, sizeof at, "%p", base);
            throw dpdk_error(std::string("cannot deregister the region at ") + at + ": " +
                             std::to_string(tx_in_flight(base)) + " frame(s) sent from it in place are still " +
                             "held by the port after " + std::to_string(timeout_ns / 1'000'000) +
                             " ms (its link down or its queue stuck?); the memory must stay valid until they are freed");
        }
        rte_delay_us_sleep(100);
    }
    ext_.remove(base);
}

void worker::tx_flush(uint64_t) noexcept
{
    for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
        if (txq_[p].n != 0) {
            flush_plane(p);
        }
    }
}

void worker::flush_plane(uint8_t plane) noexcept
{
    tx_queue& q = txq_[plane];
    const uint16_t count = q.n;
    // Timed: a PMD may block in here (net_af_packet waits for room in its kernel ring).
    const uint64_t t0 = clk_.now_ns();
    const uint64_t c0 = stage_times::begin();
    const uint16_t sent = rte_eth_tx_burst(cfg_.planes[plane].port_id, cfg_.queue, q.pkts.data(), count);
    stages_.end(stage::tx_burst, c0, sent);
    const uint64_t t1 = clk_.now_ns();
    ctr_.max_tx_burst_ns = std::max(ctr_.max_tx_burst_ns, t1 - t0);
    for (uint16_t i = 0; i < sent; ++i) {
        ctr_.tx_bytes += q.pkts[i]->pkt_len;
    }
    ctr_.tx_frames += sent;
    if (sent == 0 && q.n >= k_burst && stalled_since_[plane] == 0) {
        stalled_since_[plane] = last_poll_ns_;
    }
    if (sent != 0) {
        stalled_since_[plane] = 0;
        ctr_.plane_tx_frames[plane] += sent;
        last_tx_ns_[plane] = t1;
        log_.on_tx(plane, last_tx_ns_[plane]);
    }
    if (sent < count) {
        ++ctr_.tx_queue_full;
    }
    if (sent != 0 && sent < q.n) {
        std::copy(q.pkts.begin() + sent, q.pkts.begin() + q.n, q.pkts.begin());
    }
    q.n = uint16_t(q.n - sent);
}

void worker::flush() noexcept
{
    const link_guard::section io_ok(link_guard::section::wait);
    for (uint8_t p = 0; p < cfg_.planes.size(); ++p) {
        for (int tries = 0; tries < 100 && txq_[p].n != 0; ++tries) {
            flush_plane(p);
        }
    }
}

} // namespace metaroce::dpdk
