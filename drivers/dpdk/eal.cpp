#include "dpdk/eal.hpp"

#include "dpdk/diagnose.hpp"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include <ctime>
#include <utility>

namespace metaroce::dpdk {

std::string rte_error_string(int err)
{
    return rte_strerror(err < 0 ? -err : err);
}

int eal_init(int argc, char** argv)
{
    const eal_args a = scan_eal_args(argc, argv); // before rte_eal_init permutes argv
    const int n = rte_eal_init(argc, argv);
    if (n < 0) {
        throw dpdk_error(explain_eal_failure(a, rte_errno));
    }
    return n + 1; // rte_eal_init does not count argv[0]
}

void eal_cleanup() noexcept
{
    rte_eal_cleanup();
}

bool eal_has_hugepages() noexcept
{
    return rte_eal_has_hugepages() != 0;
}

tsc_clock::tsc_clock() : hz_(rte_get_tsc_hz()), ns_per_cycle_(1e9 / double(hz_)) {}

uint64_t tsc_clock::now_ns() const noexcept
{
    return uint64_t(double(rte_rdtsc()) * ns_per_cycle_);
}

int64_t tsc_clock::wall_offset_ns() const noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec - int64_t(now_ns());
}

uint64_t tsc_clock::ns_to_cycles(uint64_t ns) const noexcept
{
    return uint64_t(double(ns) / ns_per_cycle_);
}

eal_buffer::eal_buffer(const char* tag, size_t bytes, int socket)
    : data_(static_cast<uint8_t*>(rte_zmalloc_socket(tag, bytes, 4096, socket))), size_(bytes)
{
    if (data_ == nullptr) {
        throw dpdk_error("cannot allocate " + std::to_string(bytes) + " bytes for " + tag +
                         " from the EAL heap (raise -m, or add hugepages)");
    }
}

eal_buffer::~eal_buffer()
{
    rte_free(data_);
}

eal_buffer::eal_buffer(eal_buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0))
{
}

eal_buffer& eal_buffer::operator=(eal_buffer&& o) noexcept
{
    if (this != &o) {
        rte_free(data_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

} // namespace metaroce::dpdk
