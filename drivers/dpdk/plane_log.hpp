// Plane state changes as one worker saw them, stamped with the TSC clock, and when
// each plane sent its first frame afterwards: how quickly traffic leaves a dead
// plane and returns to a re-admitted one, measured where frames leave the process.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "dpdk/planes.hpp"

namespace metaroce::dpdk {

enum class plane_cause : uint8_t {
    detected, // the endpoint declared it dead (timeouts) or alive again (probe answered)
    admin,    // the driver/operator flag (link state, `set plane N down|up`)
};

struct plane_event {
    uint64_t t_ns = 0;  // tsc_clock time the worker noticed the change
    uint8_t plane = 0;
    bool up = false;    // the new state
    plane_cause cause = plane_cause::detected;
    std::array<uint64_t, k_max_planes> tx_at{};       // per-plane frames sent before t_ns
    std::array<uint64_t, k_max_planes> rx_at{};       // per-plane frames received before t_ns
    std::array<uint64_t, k_max_planes> last_tx_ns{};  // each plane's last send before t_ns, 0: none
    std::array<uint64_t, k_max_planes> first_tx_ns{}; // its first send after t_ns, 0: none yet
};

// A bounded log: the newest event keeps collecting first-send times; the oldest
// events are dropped once it is full (counted).
class plane_log {
public:
    static constexpr size_t k_capacity = 256;

    void record(const plane_event& e) noexcept
    {
        if (n_ == k_capacity) {
            for (size_t i = 1; i < n_; ++i) {
                ev_[i - 1] = ev_[i];
            }
            --n_;
            ++dropped_;
        }
        ev_[n_++] = e;
    }
    // A burst left on `plane` at t_ns.
    void on_tx(uint8_t plane, uint64_t t_ns) noexcept
    {
        if (n_ != 0 && ev_[n_ - 1].first_tx_ns[plane] == 0) {
            ev_[n_ - 1].first_tx_ns[plane] = t_ns;
        }
    }
    size_t size() const noexcept { return n_; }
    const plane_event& operator[](size_t i) const noexcept { return ev_[i]; }
    uint64_t dropped() const noexcept { return dropped_; }
    void clear() noexcept
    {
        n_ = 0;
        dropped_ = 0;
    }

private:
    std::array<plane_event, k_capacity> ev_{};
    size_t n_ = 0;
    uint64_t dropped_ = 0;
};

} // namespace metaroce::dpdk
