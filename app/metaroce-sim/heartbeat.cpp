#include "heartbeat.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>

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

// Simulated time in the unit that suits it: runs span microseconds to seconds.
std::string sim_time_text(sim::sim_time t)
{
    const double us = sim::to_us(t);
    char buf[32];
    if (us < 1000) {
        std::snprintf(buf, sizeof buf, "%.1f us", us);
    } else if (us < 1e6) {
        std::snprintf(buf, sizeof buf, "%.3f ms", us / 1e3);
    } else {
        std::snprintf(buf, sizeof buf, "%.3f s", us / 1e6);
    }
    return buf;
}

} // namespace

heartbeat::heartbeat(std::string name, double every_s) : name_(std::move(name))
{
    if (every_s > 0) {
        every_ = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(every_s));
    }
    start_ = clock::now();
    next_ = start_ + every_;
}

void heartbeat::operator()(const sim::sim_progress& p)
{
    if (!active()) {
        return;
    }
    const auto now = clock::now();
    if (now < next_) {
        return;
    }
    const std::chrono::duration<double> wall = now - start_;
    std::fprintf(stderr, "%s\n", format(name_, p, wall.count()).c_str());
    while (next_ <= now) {
        next_ += every_;
    }
}

std::string heartbeat::format(const std::string& name, const sim::sim_progress& p, double wall_s)
{
    std::string sim = sim_time_text(p.now) + " simulated";
    if (p.limit_is_duration && p.limit > 0) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " (%.0f %%)", 100.0 * double(p.now) / double(p.limit));
        sim = sim_time_text(p.now) + " of " + sim_time_text(p.limit) + " simulated" + pct;
    }
    char rest[256];
    std::snprintf(rest, sizeof rest,
                  ", %llu of %llu messages done, %.1f s wall, %.1f s CPU, %.0f MB resident",
                  static_cast<unsigned long long>(p.messages_done),
                  static_cast<unsigned long long>(p.messages_total), wall_s, cpu_seconds(),
                  resident_mb());
    return "metaroce-sim: '" + name + "' running: " + sim + rest;
}

} // namespace metaroce::sim_cli
