// What the Verbs front end needs from a packet backend: one metaroce node (the core
// endpoint and its packet I/O) that a progress thread and the application's
// ibv_poll_cq drive through the shared endpoint loop, one at a time (under the
// context's mutex). Two implementations: kernel UDP sockets (backend_udp.cpp, linked
// in) and DPDK ports (backend_dpdk.cpp, a plugin loaded only when selected, so UDP
// users do not load DPDK).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "metaroce/endpoint.hpp"
#include "verbs/settings.hpp"

namespace metaroce::verbs {

class backend {
public:
    virtual ~backend() = default;
    virtual endpoint& ep() noexcept = 0;
    // The node's plane addresses, [0] the node address; one GID each.
    virtual const std::vector<uint32_t>& plane_addrs() const noexcept = 0;
    virtual uint32_t max_mrs() const noexcept = 0;
    // One pass of the endpoint loop; true if it did work.
    virtual bool poll(uint64_t now_ns) = 0;
    // Readable while packets wait (the progress thread sleeps on it), or -1: a poll
    // mode port that nothing signals (the progress thread naps briefly instead).
    virtual int wait_fd() const noexcept = 0;
    // false: a backend this process cannot make again once it is gone (DPDK: the EAL
    // and its vdev ports start once), so the device's last close keeps the node, idle,
    // for the next open with the same settings.
    virtual bool remakeable() const noexcept { return true; }
    // Longest nap of an idle progress thread that cannot sleep on wait_fd().
    virtual uint64_t max_idle_nap_ns() const noexcept { return 0; }
    // Backend counters worth a line in the METAROCE_LOG close summary ("" if none).
    virtual std::string log_note() const { return {}; }
    // Memory just registered with the core: a backend whose ports can send from it in
    // place (DPDK zero copy) registers it too. Both calls under the context's mutex,
    // which serializes them with poll(): the worker's region table is never touched by
    // two threads at once.
    virtual void mem_added(const void* base, size_t len) { (void)base, (void)len; }
    // Before the core forgets the region at base: 0, or EBUSY (with the reason in why)
    // when frames sent from it in place are still held by a port after a bounded wait;
    // the region then stays registered and the memory must stay valid.
    virtual int mem_removed(const void* base, std::string& why)
    {
        (void)base, (void)why;
        return 0;
    }
    // Called on the progress thread when it starts and before it ends.
    virtual void thread_start() {}
    virtual void thread_stop() {}
};

// The backend the settings name; nullptr and the reason in `err` on failure.
std::unique_ptr<backend> make_backend(const settings& st, std::string& err);
std::unique_ptr<backend> make_udp_backend(const settings& st, std::string& err);

// The DPDK plugin's one export (libmetaroce_verbs_dpdk.so): a new backend, or nullptr
// with the reason in `err`. Same compiler and build as the front end: C++ types pass.
using make_dpdk_fn = backend* (*)(const settings& st, std::string& err);
inline constexpr const char* k_dpdk_plugin = "libmetaroce_verbs_dpdk.so";
inline constexpr const char* k_dpdk_entry = "metaroce_verbs_make_dpdk_backend";

// The settings applied to a backend's transport defaults (shared with the plugin).
inline transport_config verbs_transport(const settings& st, transport_config t)
{
    t.mtu = st.mtu;
    t.paths = st.paths;
    t.max_streams = st.max_streams;
    // A connection fails after the budget a Verbs requester with the usual settings
    // (timeout 14, retry_cnt 7: 4.096 us * 2^14 * 8) gives its peer, not the core's
    // fabric default of 100 ms: a process-based peer on a busy host can pause longer.
    t.fail_silence_ns = 537'000'000;
    // Connecting waits as long: CONNECT is resent 3 times at connect_retry_ns (200 us),
    // then at double the wait up to 64x (12.8 ms): 50 resends span about 0.55 s, not
    // the core default's 0.17 s, which a peer process stopped on a loaded host outlasts
    // (its QPs would fail before their own budget ran out).
    t.connect_retries = 50;
    if (st.min_rto_us != 0) {
        t.min_rto_ns = uint64_t(st.min_rto_us) * 1000;
        t.max_rto_ns = std::max(t.max_rto_ns, t.min_rto_ns); // a floor raises the ceiling
    }
    return t;
}

} // namespace metaroce::verbs
