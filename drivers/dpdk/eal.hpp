// EAL start and stop, TSC time, and hugepage-backed (or --no-huge) buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace metaroce::dpdk {

class dpdk_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Starts the EAL from argv; returns how many arguments it consumed (argv[0]
// included), so the application parses argv + consumed. Throws dpdk_error.
int eal_init(int argc, char** argv);
void eal_cleanup() noexcept;
// True when the EAL runs on hugepages (false under --no-huge).
bool eal_has_hugepages() noexcept;

// Nanoseconds from the TSC: what the core gets as now_ns.
class tsc_clock {
public:
    tsc_clock();
    uint64_t now_ns() const noexcept;
    uint64_t hz() const noexcept { return hz_; }
    uint64_t ns_to_cycles(uint64_t ns) const noexcept;
    // CLOCK_REALTIME ns minus now_ns(): turns logged times into wall-clock times.
    int64_t wall_offset_ns() const noexcept;

private:
    uint64_t hz_;
    double ns_per_cycle_;
};

// Zeroed, cache-aligned memory from the EAL heap (rte_zmalloc_socket): on
// hugepages when the EAL has them, on ordinary pages under --no-huge. Memory
// regions of the core live here.
class eal_buffer {
public:
    eal_buffer() = default;
    eal_buffer(const char* tag, size_t bytes, int socket);
    ~eal_buffer();
    eal_buffer(eal_buffer&& o) noexcept;
    eal_buffer& operator=(eal_buffer&& o) noexcept;
    eal_buffer(const eal_buffer&) = delete;
    eal_buffer& operator=(const eal_buffer&) = delete;

    uint8_t* data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }

private:
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

std::string rte_error_string(int err);

} // namespace metaroce::dpdk
