// The interrupt handle API (rte_intr_instance_alloc and its setters) is experimental
// in DPDK 22.11, and the handle is opaque without it.
#define ALLOW_EXPERIMENTAL_API 1

#include "dpdk/link_guard.hpp"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_pause.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <bitset>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "dpdk/eal.hpp"

namespace metaroce::dpdk::link_guard {

namespace {

enum : int { k_off = 0, k_open = 1, k_closed = 2 };

std::atomic<int> g_state{k_off};
std::atomic<uint32_t> g_inside{0};  // sections open now
std::atomic<bool> g_stopping{false};
std::mutex g_mu;                    // bring-up and close, main threads only
std::bitset<RTE_MAX_ETHPORTS> g_memif_ports;
rte_intr_handle* g_handle = nullptr;
int g_efd = -1;
int g_eal_epfd = -1;                // interrupt thread only

// Waits out the sections that saw the gate open. Sequentially consistent with
// try_enter(): either the lcore sees k_closed, or we see its count.
void close_gate() noexcept
{
    g_state.store(k_closed, std::memory_order_seq_cst);
    for (unsigned spins = 0; g_inside.load(std::memory_order_seq_cst) != 0; ++spins) {
        if (spins < 4096) {
            rte_pause();
        } else {
            std::this_thread::yield(); // a control path (port close) holds a section
        }
    }
}

// True when epoll instance `epfd` watches `fd` (its fdinfo lists "tfd: N" per target).
bool watches(int epfd, int fd) noexcept
{
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
    const int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0) {
        return false;
    }
    char buf[8192];
    const ssize_t n = read(f, buf, sizeof buf - 1);
    close(f);
    buf[n > 0 ? n : 0] = '\0';
    for (const char* p = std::strstr(buf, "tfd:"); p != nullptr; p = std::strstr(p + 4, "tfd:")) {
        if (std::strtol(p + 4, nullptr, 10) == fd) {
            return true;
        }
    }
    return false;
}

// The interrupt thread's own epoll instance (the EAL keeps it private; it is the one
// watching our eventfd), so the park can wake exactly when another source is ready.
// -1 when not found: the park falls back to short naps.
int eal_epoll_fd() noexcept
{
    if (g_eal_epfd >= 0 && watches(g_eal_epfd, g_efd)) {
        return g_eal_epfd; // the EAL rebuilds it when callbacks come and go
    }
    g_eal_epfd = -1;
    DIR* d = opendir("/proc/self/fd");
    if (d == nullptr) {
        return -1;
    }
    while (const dirent* e = readdir(d)) {
        char link[64] = {};
        const int fd = std::atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != dirfd(d) &&
            readlinkat(dirfd(d), e->d_name, link, sizeof link - 1) > 0 &&
            std::strcmp(link, "anon_inode:[eventpoll]") == 0 && watches(fd, g_efd)) {
            g_eal_epfd = fd;
            break;
        }
    }
    closedir(d);
    return g_eal_epfd;
}

void set_ready(bool ready) noexcept
{
    uint64_t v = 1;
    [[maybe_unused]] const ssize_t r = ready ? write(g_efd, &v, sizeof v) : read(g_efd, &v, sizeof v);
}

// The EAL interrupt thread calls this whenever it comes back to epoll (we leave the
// eventfd readable); what else became ready runs after we return. Parked, the thread
// sleeps on its own epoll set minus our eventfd: it wakes as soon as memif (or any
// source, or a change of the set) needs it, and not otherwise.
void park(void*)
{
    set_ready(false);
    if (g_stopping.load(std::memory_order_acquire)) {
        return; // not ready any more: the EAL stops calling us
    }
    g_state.store(k_open, std::memory_order_seq_cst); // release: memif's last changes
    const int epfd = eal_epoll_fd();
    if (epfd >= 0) {
        pollfd p{epfd, POLLIN, 0};
        poll(&p, 1, int(k_watch_ms));
    } else {
        timespec t{0, long(k_park_ms) * 1'000'000L};
        nanosleep(&t, nullptr);
    }
    close_gate();
    set_ready(!g_stopping.load(std::memory_order_acquire));
}

void engage()
{
    g_efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
    g_handle = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
    if (g_efd < 0 || g_handle == nullptr || rte_intr_fd_set(g_handle, g_efd) != 0 ||
        rte_intr_type_set(g_handle, RTE_INTR_HANDLE_EXT) != 0) {
        if (g_efd >= 0) {
            close(g_efd);
        }
        rte_intr_instance_free(g_handle);
        g_handle = nullptr;
        g_efd = -1;
        throw dpdk_error("cannot set up the memif link guard (eventfd or interrupt handle)");
    }
    g_stopping.store(false);
    close_gate(); // closed until the interrupt thread first parks
    const int rc = rte_intr_callback_register(g_handle, park, nullptr);
    if (rc < 0) {
        g_state.store(k_off, std::memory_order_seq_cst);
        close(g_efd);
        rte_intr_instance_free(g_handle);
        g_handle = nullptr;
        g_efd = -1;
        throw dpdk_error("cannot register the memif link guard: " + rte_error_string(rc));
    }
}

void disengage() noexcept
{
    g_stopping.store(true, std::memory_order_release);
    set_ready(true); // wakes the park
    // -EAGAIN while the thread is still in park(): the eventfd woke it, it is leaving.
    while (rte_intr_callback_unregister(g_handle, park, nullptr) == -EAGAIN) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    close(g_efd);
    rte_intr_instance_free(g_handle);
    g_handle = nullptr;
    g_efd = -1;
    g_eal_epfd = -1;
    g_state.store(k_off, std::memory_order_seq_cst);
}

} // namespace

void port_opened(uint16_t port_id, bool memif)
{
    if (!memif || port_id >= RTE_MAX_ETHPORTS) {
        return;
    }
    const std::lock_guard lock(g_mu);
    if (g_memif_ports.test(port_id)) {
        return;
    }
    if (g_memif_ports.none()) {
        engage();
    }
    g_memif_ports.set(port_id);
}

void port_closed(uint16_t port_id) noexcept
{
    const std::lock_guard lock(g_mu);
    if (port_id >= RTE_MAX_ETHPORTS || !g_memif_ports.test(port_id)) {
        return;
    }
    g_memif_ports.reset(port_id);
    if (g_memif_ports.none()) {
        disengage();
    }
}

bool engaged() noexcept
{
    return g_state.load(std::memory_order_relaxed) != k_off;
}

bool try_enter() noexcept
{
    g_inside.fetch_add(1, std::memory_order_seq_cst);
    if (g_state.load(std::memory_order_seq_cst) == k_closed) {
        g_inside.fetch_sub(1, std::memory_order_release);
        return false;
    }
    return true; // acquire: what memif did before reopening is visible
}

void enter() noexcept
{
    while (!try_enter()) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

void leave() noexcept
{
    g_inside.fetch_sub(1, std::memory_order_release);
}

uint16_t rx_burst(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n) noexcept
{
    const section in;
    return in ? rte_eth_rx_burst(port, queue, pkts, n) : 0;
}

uint16_t tx_burst(uint16_t port, uint16_t queue, rte_mbuf** pkts, uint16_t n) noexcept
{
    const section in;
    return in ? rte_eth_tx_burst(port, queue, pkts, n) : 0;
}

} // namespace metaroce::dpdk::link_guard
