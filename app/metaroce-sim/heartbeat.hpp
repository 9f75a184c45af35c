// Progress on stderr while a run takes long: the simulator's loop calls the heartbeat
// (simulator::on_progress) every few thousand events, and a line goes out every few
// seconds of wall time with how far the run has got in simulated time and in messages,
// beside the process's wall time, CPU time and resident memory. Runs shorter than the
// interval print nothing.
#pragma once

#include <chrono>
#include <string>

#include "sim/simulator.hpp"

namespace metaroce::sim_cli {

class heartbeat {
public:
    // every_s <= 0: prints nothing.
    heartbeat(std::string name, double every_s);

    bool active() const noexcept { return every_.count() > 0; }
    // From the simulator's event loop: prints when the next line is due.
    void operator()(const sim::sim_progress& p);

    // The line itself, for tests: wall_s is the time since the run started.
    static std::string format(const std::string& name, const sim::sim_progress& p, double wall_s);

private:
    using clock = std::chrono::steady_clock;
    std::string name_;
    clock::duration every_{};
    clock::time_point start_;
    clock::time_point next_;
};

} // namespace metaroce::sim_cli
