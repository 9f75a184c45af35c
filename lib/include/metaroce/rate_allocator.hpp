// Receiver side of the rate hints (spec 6.4): splits this node's inbound capacity
// among the connections that sent it data in the last epoch, max-min fair, and says
// each sender's share in every ACK. Senders converge on the share directly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace metaroce {

class rate_allocator {
public:
    // capacity_mbps == 0 disables hints (every share reads 0 = "no hint").
    rate_allocator(uint64_t capacity_mbps, double utilization, uint64_t epoch_ns,
                   uint32_t max_conns);

    bool enabled() const noexcept { return capacity_mbps_ != 0; }
    // A data packet of `bytes` arrived for connection slot `idx` at `now`.
    void on_packet(uint32_t idx, uint32_t bytes, bool ce, uint64_t now) noexcept;
    // The share of slot `idx`, in Mb/s (0 when disabled or not active).
    uint32_t share_mbps(uint32_t idx) const noexcept { return idx < share_.size() ? share_[idx] : 0; }
    // What goes in the ACK: the share while the inbound side is contended (two or more
    // senders), 0 ("no hint") while one sender has the node to itself.
    uint32_t hint_mbps(uint32_t idx) const noexcept
    {
        return std::max<size_t>(active_.size(), last_active_) >= 2 ? share_mbps(idx) : 0;
    }
    // Forget a slot (connection freed).
    void release(uint32_t idx) noexcept;
    uint32_t active() const noexcept { return last_active_; }

private:
    void close_epoch(uint64_t now) noexcept;

    uint64_t capacity_mbps_;
    double utilization_;
    uint64_t epoch_ns_;
    uint64_t epoch_end_ = 0;
    uint32_t last_active_ = 0;
    // Share of capacity handed out, adapted to the marks this node sees: when more than
    // a tenth of its inbound packets are CE-marked the senders together hold a standing last-hop
    // queue (e.g. their base-RTT estimates are stale), so it hands out less until the
    // queue drains, then climbs back to `utilization_`.
    double scale_;
    uint32_t epoch_pkts_ = 0;
    uint32_t epoch_ce_ = 0;
    std::vector<uint64_t> bytes_;    // per slot, this epoch
    std::vector<uint32_t> share_;    // per slot, current hint
    std::vector<uint8_t> age_;       // 1 = also active in the previous epoch
    std::vector<uint32_t> active_;   // slots with bytes this epoch
    std::vector<uint32_t> scratch_;  // water-filling work list, reserved once
};

} // namespace metaroce
