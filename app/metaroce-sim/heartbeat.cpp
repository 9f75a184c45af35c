#include "heartbeat.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace metaroce::sim_cli {

namespace {

double cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

double resident_mb()
{
    unsigned long size = 0;
    unsigned long resident = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) {
        return 0;
    }
    const int n = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return n == 2 ? double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20) : 0;
}

} // namespace

heartbeat::heartbeat(std::string name, double every_s)
{
    if (every_s <= 0) {
        return;
    }
    thread_ = std::jthread([name = std::move(name), every_s](std::stop_token stop) {
        using clock = std::chrono::steady_clock;
        const auto every = std::chrono::duration_cast<clock::duration>(
            std::chrono::duration<double>(every_s));
        const auto start = clock::now();
        auto next = start + every;
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        while (true) {
            // Wakes early only when the run ends (stop requested by the destructor).
            cv.wait_until(lock, stop, next, [] { return false; });
            if (stop.stop_requested()) {
                return;
            }
            const std::chrono::duration<double> wall = clock::now() - start;
            std::fprintf(stderr, "metaroce-sim: '%s' running: %.1f s wall, %.1f s CPU, %.0f MB resident\n",
                         name.c_str(), wall.count(), cpu_seconds(), resident_mb());
            next += every;
        }
    });
}

heartbeat::~heartbeat() = default; // jthread requests stop and joins

} // namespace metaroce::sim_cli
