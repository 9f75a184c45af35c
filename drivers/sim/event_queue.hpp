// Pending events in a binary heap ordered by (time, insertion sequence): events at
// the same instant run in the order they were scheduled, so a run is reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/sim_time.hpp"

namespace metaroce::sim {

enum class event_kind : uint8_t {
    arrival,     // a = packet, b = link it just crossed
    host_timer,  // a = host
    tx_wake,     // a = host
    fault,       // a = index into the scenario's fault events
    sample,      // metrics: sample the last-hop queues, once per timeline bin
};
inline constexpr size_t k_event_kinds = 5;

struct event {
    sim_time time = 0;
    uint64_t seq = 0;
    uint32_t a = 0;
    uint32_t b = 0;
    event_kind kind = event_kind::arrival;
};

class event_queue {
public:
    void push(sim_time time, event_kind kind, uint32_t a, uint32_t b = 0);
    // Removes and returns the earliest event; the queue must not be empty.
    event pop();
    bool empty() const noexcept { return heap_.empty(); }
    size_t size() const noexcept { return heap_.size(); }
    sim_time next_time() const noexcept { return heap_.empty() ? k_never : heap_.front().time; }
    uint64_t pushed() const noexcept { return seq_; }

private:
    std::vector<event> heap_;
    uint64_t seq_ = 0;
};

} // namespace metaroce::sim
