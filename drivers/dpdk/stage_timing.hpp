// Where a worker's cycles go, per stage of the run-to-completion loop, for finding
// latency (build with -Dstage_timing=true; metaroce-perf --counters prints them).
// Off (the default) every hook is an empty inline function: no code, no state read.
//
//   rx_burst    rte_eth_rx_burst calls that returned frames (items: frames)
//   parse       Eth/IPv4/UDP checks and parse_frame, per frame
//   placement   endpoint::on_packet: the core's receive path and payload copy
//   timers      endpoint::on_timer
//   completion  the program taking completions (poll_cq and what it does with them)
//   ack_build   endpoint::poll_tx calls that built a frame without payload (ACK, NAK,
//               control): what answering costs
//   data_build  poll_tx calls that built a data frame (headers, gather or references)
//   tx_burst    rte_eth_tx_burst calls (items: frames the port took)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <rte_cycles.h>

#ifndef METAROCE_STAGE_TIMING
#define METAROCE_STAGE_TIMING 0
#endif

namespace metaroce::dpdk {

inline constexpr bool k_stage_timing = METAROCE_STAGE_TIMING != 0;

enum class stage : uint8_t { rx_burst, parse, placement, timers, completion, ack_build, data_build, tx_burst, count };
inline constexpr std::array<const char*, size_t(stage::count)> k_stage_names{
    "rx_burst", "parse", "placement", "timers", "completion", "ack_build", "data_build", "tx_burst"};

struct stage_times {
    struct one {
        uint64_t calls = 0;
        uint64_t items = 0;
        uint64_t cycles = 0;
        uint64_t max_cycles = 0;
        // Calls over k_trim_us (the lcore lost its CPU: a shared machine) are left out of
        // the trimmed figures, which say what the stage costs when it runs.
        uint64_t trim_calls = 0;
        uint64_t trim_items = 0;
        uint64_t trim_cycles = 0;
    };
    static constexpr uint64_t k_trim_us = 50;
    std::array<one, size_t(stage::count)> s{};
    uint64_t trim_limit = 0; // k_trim_us in TSC cycles, set on first use

    // A timestamp, or 0 when timing is off (the compiler drops the rest).
    static uint64_t begin() noexcept
    {
        if constexpr (k_stage_timing) {
            return rte_rdtsc();
        }
        return 0;
    }
    void end(stage which, uint64_t t0, uint64_t items = 1) noexcept
    {
        if constexpr (k_stage_timing) {
            const uint64_t d = rte_rdtsc() - t0;
            one& o = s[size_t(which)];
            ++o.calls;
            o.items += items;
            o.cycles += d;
            o.max_cycles = d > o.max_cycles ? d : o.max_cycles;
            if (trim_limit == 0) {
                trim_limit = rte_get_tsc_hz() / 1'000'000 * k_trim_us;
            }
            if (d <= trim_limit) {
                ++o.trim_calls;
                o.trim_items += items;
                o.trim_cycles += d;
            }
        } else {
            (void)which, (void)t0, (void)items;
        }
    }
};

} // namespace metaroce::dpdk
