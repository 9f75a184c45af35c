#include "sim/host.hpp"

#include <algorithm>

#include "metaroce/wire/codec.hpp"
#include "sim/wire_size.hpp"

namespace metaroce::sim {

namespace {
// Packets per NIC port the driver lets queue: enough to keep the wire busy while
// the next one is pulled, few enough that the core's pacing and windows decide.
constexpr uint64_t k_nic_packets_per_plane = 2;
// Packets one port may hold while another is hungry: the core picks each packet's
// plane, so a short burst to one port must not idle the others (a NIC has a TX ring
// per port; the DPDK worker stops pulling at one full burst queued on a port).
constexpr uint64_t k_nic_ring_packets = 16;

} // namespace

host::host(uint32_t index, const scenario& s, const host_load& load, event_queue& q, fabric& net,
           packet_pool& pool)
    : index_(index),
      planes_(s.topology.planes),
      hosts_(s.topology.hosts),
      ep_(make_transport(index, s, load)),
      q_(q),
      net_(net),
      pool_(pool)
{
    const uint32_t max_wire = wire_bytes(uint32_t(wire::max_packet_len(s.transport.mtu)));
    pkt_time_ = sim_time(double(max_wire) * 8000.0 / s.topology.link_gbps);
    // Pull while some port is short of packets and none holds a full ring: a cap on the
    // sum instead let one port's burst idle the others (plane scaling, issue 12).
    port_limit_ = pkt_time_ * k_nic_packets_per_plane;
    ring_limit_ = pkt_time_ * k_nic_ring_packets;
}

void host::on_packet(uint32_t pkt, sim_time now)
{
    const packet_meta& m = pool_.meta(pkt);
    const rx_meta rx{host_addr(m.src_host), m.plane, m.udp_sport, m.ce};
    ++stats_.rx_delivered;
    const uint64_t placed = ep_->stats().rx_payload_bytes;
    ep_->on_packet(rx, pool_.buffer(pkt).first(m.len), to_ns(now));
    if (meter_ != nullptr && ep_->stats().rx_payload_bytes != placed) {
        meter_->add(now, m.src_host, m.plane, ep_->stats().rx_payload_bytes - placed);
    }
    pool_.free(pkt);
    settle(now, false);
}

void host::on_timer_event(sim_time scheduled, sim_time now)
{
    // Only the earliest armed timer runs; superseded events are skipped.
    if (scheduled != timer_at_) {
        return;
    }
    timer_at_ = k_never;
    if (io::run_due_timers(*ep_, to_ns(now))) { // not due: the core moved it later
        ++stats_.timer_calls;
    }
    settle(now, true);
}

void host::on_tx_wake(sim_time scheduled, sim_time now)
{
    if (scheduled != wake_at_) {
        return;
    }
    wake_at_ = k_never;
    settle(now, false);
}

void host::settle(sim_time now, bool after_timer)
{
    drain(now);
    pump_tx(now);
    drain(now);
    arm_timer(now, after_timer);
}

void host::drain(sim_time now)
{
    // The listener may post more work while we drain; loop until both are empty.
    for (;;) {
        const size_t nev = ep_->poll_events(ev_buf_);
        for (size_t i = 0; i < nev; ++i) {
            if (listener_ != nullptr) {
                listener_->on_conn_event(index_, ev_buf_[i], now);
            }
        }
        const size_t ncq = ep_->poll_cq(cq_buf_);
        for (size_t i = 0; i < ncq; ++i) {
            if (listener_ != nullptr) {
                listener_->on_completion(index_, cq_buf_[i], now);
            }
        }
        if (nev == 0 && ncq == 0) {
            return;
        }
    }
}

// Time the fullest NIC port needs to send what it holds.
sim_time host::egress_backlog(sim_time now) const noexcept
{
    sim_time most = 0;
    for (uint32_t p = 0; p < planes_; ++p) {
        const sim_time busy = net_.nic_busy_until(index_, p);
        if (busy > now) {
            most = std::max(most, busy - now);
        }
    }
    return most;
}

// True while some port holds less than its allowance.
bool host::port_hungry(sim_time now) const noexcept
{
    for (uint32_t p = 0; p < planes_; ++p) {
        const sim_time busy = net_.nic_busy_until(index_, p);
        if (busy < now + port_limit_) {
            return true;
        }
    }
    return false;
}

// Earliest time some port falls below its allowance.
sim_time host::hungry_time(sim_time now) const noexcept
{
    sim_time t = UINT64_MAX;
    for (uint32_t p = 0; p < planes_; ++p) {
        const sim_time busy = net_.nic_busy_until(index_, p);
        t = std::min(t, busy > port_limit_ ? busy - port_limit_ + 1 : now + 1);
    }
    return std::max(t, now + 1);
}

void host::pump_tx(sim_time now)
{
    tx_now_ = now;
    if (io::pull_tx(*ep_, *this, to_ns(now)).why == io::tx_stop::core_idle) {
        return; // nothing to send: a post, packet or timer will call us again
    }
    const sim_time wake = std::max(hungry_time(now), drain_time(now));
    if (wake < wake_at_) {
        wake_at_ = wake;
        q_.push(wake, event_kind::tx_wake, index_);
    }
}

std::span<uint8_t> host::tx_buffer(uint64_t) noexcept
{
    if (!port_hungry(tx_now_) || egress_backlog(tx_now_) >= ring_limit_) {
        return {};
    }
    tx_pkt_ = pool_.alloc();
    return pool_.buffer(tx_pkt_);
}

// Ports already holding their allowance: the core puts new data on the others while
// one has room (spec 5.3), so one port's backlog does not stop every plane's pulls.
uint32_t host::tx_busy_planes(uint64_t) const noexcept
{
    uint32_t busy = 0;
    for (uint32_t p = 0; p < planes_ && p < 32; ++p) {
        if (net_.nic_busy_until(index_, p) >= tx_now_ + port_limit_) {
            busy |= 1u << p;
        }
    }
    return busy;
}

void host::tx_unused() noexcept
{
    pool_.free(tx_pkt_);
}

io::tx_next host::tx_send(const tx_frame& f, uint64_t) noexcept
{
    const uint32_t pkt = tx_pkt_;
    ++stats_.tx_pulls;
    const uint32_t dst = f.dst_addr - k_host_addr_base;
    if ((f.dst_addr & 0xFFFF0000u) != k_host_addr_base || dst >= hosts_ || f.plane >= planes_ ||
        f.len == 0 || f.len > f.buf.size()) {
        ++stats_.bad_tx_frames;
        pool_.free(pkt);
        return io::tx_next::more;
    }
    packet_meta& m = pool_.meta(pkt);
    m.src_host = index_;
    m.dst_host = dst;
    m.len = uint32_t(f.len);
    m.wire_bytes = wire_bytes(m.len);
    m.udp_sport = f.udp_sport;
    m.plane = f.plane;
    m.ect = f.ect;
    m.ce = false;
    net_.transmit(pkt, tx_now_);
    return io::tx_next::more;
}

// Earliest time every port holds less than a full ring again.
sim_time host::drain_time(sim_time now) const noexcept
{
    sim_time t = now + 1;
    for (uint32_t p = 0; p < planes_; ++p) {
        const sim_time busy = net_.nic_busy_until(index_, p);
        if (busy >= now + ring_limit_) {
            t = std::max(t, busy - ring_limit_ + 1);
        }
    }
    return t;
}

void host::arm_timer(sim_time now, bool after_timer)
{
    const uint64_t next_ns = ep_->next_timer();
    if (next_ns >= to_ns(k_never)) {
        return; // k_no_deadline, or beyond anything a run reaches
    }
    sim_time at = std::max(from_ns(next_ns), now);
    // A timer that is still due right after on_timer() ran waits a nanosecond, so a
    // core that keeps reporting "now" cannot stall virtual time.
    if (after_timer && at <= now) {
        at = now + k_ps_per_ns;
    }
    if (at < timer_at_) {
        timer_at_ = at;
        q_.push(at, event_kind::host_timer, index_);
    }
}

} // namespace metaroce::sim
