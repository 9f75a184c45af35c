// Progress on stderr while a run takes long: a line every few seconds from a watcher
// thread, none for runs shorter than the interval. The simulator has no progress hook
// (its state is private and not thread-safe), so the line reports what the process can
// see of itself: wall time, CPU time and resident memory.
#pragma once

#include <string>
#include <thread>

namespace metaroce::sim_cli {

class heartbeat {
public:
    // every_s <= 0: prints nothing.
    heartbeat(std::string name, double every_s);
    ~heartbeat();
    heartbeat(const heartbeat&) = delete;
    heartbeat& operator=(const heartbeat&) = delete;

private:
    std::jthread thread_;
};

} // namespace metaroce::sim_cli
