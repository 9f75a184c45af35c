// One model run: builds the fabric, the hosts and the workload from a scenario,
// then processes events in virtual-time order until the workload is done, the
// scenario's duration is reached or nothing is left to do.
#pragma once

#include <array>
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

class simulator {
public:
    explicit simulator(scenario s);
    ~simulator();
    simulator(const simulator&) = delete;
    simulator& operator=(const simulator&) = delete;

    sim_result run();

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
};

} // namespace metaroce::sim
