// One model run: builds the fabric, the hosts and the workload from a scenario,
// then processes events in virtual-time order until the workload is done, the
// scenario's duration is reached or nothing is left to do.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/fabric.hpp"
#include "sim/host.hpp"
#include "sim/metrics.hpp"
#include "sim/packet_pool.hpp"
#include "sim/result.hpp"
#include "sim/scenario.hpp"
#include "sim/workload.hpp"

namespace metaroce::sim {

// How far a run has got, for a progress display (metaroce-sim's --progress).
struct sim_progress {
    sim_time now = 0;             // virtual time reached
    sim_time limit = 0;           // where the run stops at the latest
    bool limit_is_duration = false; // the scenario's duration (else the safety limit)
    uint64_t events = 0;
    uint64_t messages_done = 0;   // completed or failed at the initiator
    uint64_t messages_total = 0;
};

class simulator {
public:
    explicit simulator(scenario s);
    ~simulator();
    simulator(const simulator&) = delete;
    simulator& operator=(const simulator&) = delete;

    sim_result run();

    // Called from run(), on its thread, every k_progress_events events: the hook
    // decides itself (by wall clock) whether to show anything. Reads only.
    static constexpr uint64_t k_progress_events = 1u << 14;
    void on_progress(std::function<void(const sim_progress&)> hook) { progress_ = std::move(hook); }

    // For tests and diagnostics.
    const fabric& net() const noexcept { return net_; }
    const host& node(uint32_t i) const noexcept { return *hosts_[i]; }
    const scenario& config() const noexcept { return s_; }
    const goodput_meter& meter() const noexcept { return meter_; }

private:
    void dispatch(const event& e);
    sim_result collect(const char* stop_reason, double wall_s) const;
    void sample(sim_time now);

    scenario s_;
    event_queue q_;
    packet_pool pool_;
    fabric net_;
    goodput_meter meter_;
    std::vector<uint32_t> last_hop_links_; // leaf -> sink host, every plane
    std::vector<std::unique_ptr<host>> hosts_;
    std::unique_ptr<workload> work_;
    sim_time now_ = 0;
    uint64_t events_ = 0;
    std::array<uint64_t, k_event_kinds> by_kind_{};
    uint64_t peak_in_flight_ = 0;
    std::function<void(const sim_progress&)> progress_;
};

} // namespace metaroce::sim
