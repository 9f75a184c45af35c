// Virtual time of the model. Picoseconds keep serialization times exact at any
// link rate (4162 bytes at 100 Gb/s is 332.96 ns); the core itself sees nanoseconds.
#pragma once

#include <cstdint>
#include <limits>

namespace metaroce::sim {

using sim_time = uint64_t; // picoseconds

inline constexpr sim_time k_never = std::numeric_limits<sim_time>::max();
inline constexpr sim_time k_ps_per_ns = 1000;

constexpr uint64_t to_ns(sim_time t) noexcept { return t / k_ps_per_ns; }
constexpr sim_time from_ns(uint64_t ns) noexcept { return ns * k_ps_per_ns; }
constexpr double to_us(sim_time t) noexcept { return double(t) / 1e6; }

} // namespace metaroce::sim
