// The DPDK backend (drivers/dpdk), built as the plugin libmetaroce_verbs_dpdk.so: the
// EAL is started in-process from METAROCE_EAL at the first ibv_open_device, the
// node's ports are METAROCE_DPDK_PORTS (one per plane), and the context's progress
// thread is the worker's lcore (registered with the EAL, so mempool caches work).
//
// Registered memory regions are registered with the worker's zero-copy TX too
// (dpdk/extbuf.hpp): data frames chain their payload straight from the application's
// memory where every port of the node can read it (virtual devices such as memif read
// with the CPU; a NIC needs the DMA mapping extbuf does), and are copied otherwise.
// Received payloads are copied from the mbufs into the regions by the core.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include <map>
#include <mutex>
#include <sstream>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "dpdk/diagnose.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/node.hpp"
#include "dpdk/planes.hpp"
#include "dpdk/port.hpp"
#include "verbs/backend.hpp"

namespace metaroce::verbs {
namespace {

// The EAL starts once per process and a closed vdev port cannot be probed again: one
// context at a time, and none after the first closed.
enum class eal_state { none, running, spent };
std::mutex g_mu;
eal_state g_eal = eal_state::none;
bool g_open = false;

bool has_opt(const std::vector<std::string>& a, const char* opt)
{
    const std::string o = opt;
    for (const auto& s : a) {
        if (s == o || s.rfind(o + "=", 0) == 0) {
            return true;
        }
    }
    return false;
}

void start_eal(const std::string& args)
{
    std::vector<std::string> a;
    std::istringstream in(args);
    for (std::string w; in >> w;) {
        a.push_back(w);
    }
    // Quiet by default (the program's own output is what its user reads); runtime
    // files under a prefix of this process's own, removed at exit, unless chosen.
    // (--in-memory refuses --no-huge; --no-shconf makes memif's probe complain.)
    if (!has_opt(a, "--log-level")) {
        a.insert(a.begin(), "--log-level=*:warning");
    }
    if (!has_opt(a, "--telemetry") && !has_opt(a, "--no-telemetry")) {
        a.insert(a.begin(), "--no-telemetry");
    }
    const bool own_prefix = !has_opt(a, "--file-prefix") && !has_opt(a, "--in-memory") &&
                            !has_opt(a, "--proc-type") && !has_opt(a, "--no-shconf");
    if (own_prefix) {
        a.insert(a.begin(), "--file-prefix=metaroce-verbs-" + std::to_string(getpid()));
    }
    a.insert(a.begin(), "metaroce-verbs");
    // The EAL may keep pointers into argv: it lives as long as the process.
    static std::vector<std::string> keep;
    static std::vector<char*> argv;
    keep = a;
    argv.clear();
    for (auto& s : keep) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);
    // rte_eal_init pins the calling thread (the application's) to the main lcore:
    // give it its CPUs back.
    cpu_set_t cpus;
    const bool saved = pthread_getaffinity_np(pthread_self(), sizeof cpus, &cpus) == 0;
    dpdk::eal_init(int(argv.size() - 1), argv.data());
    if (saved) {
        pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
    }
    if (own_prefix) {
        static std::string dir;
        dir = rte_eal_get_runtime_dir();
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        });
    }
}

class dpdk_backend final : public backend {
public:
    dpdk_backend(const dpdk::node_params& p, std::vector<uint32_t> planes)
        : n_(std::make_unique<dpdk::node>(p)), planes_(std::move(planes))
    {
    }
    // The worker flushes, the ports close. The EAL stays up until the process exits:
    // rte_eal_cleanup() unmaps memory under DPDK 22.11's interrupt thread (a crash
    // seen with memif), and the EAL's memory is the process's own.
    ~dpdk_backend() override
    {
        n_.reset();
        std::lock_guard<std::mutex> g(g_mu);
        g_eal = eal_state::spent;
        g_open = false;
    }
    endpoint& ep() noexcept override { return n_->w().ep(); }
    bool remakeable() const noexcept override { return false; }
    const std::vector<uint32_t>& plane_addrs() const noexcept override { return planes_; }
    uint32_t max_mrs() const noexcept override { return endpoint_config{}.max_mrs; }
    bool poll(uint64_t now_ns) override { return n_->w().poll(now_ns); }
    int wait_fd() const noexcept override { return -1; }
    // An idle progress thread naps at most this long: a first packet after a quiet
    // spell waits up to 1 ms, while an idle context costs ~1000 wakeups a second.
    uint64_t max_idle_nap_ns() const noexcept override { return 1'000'000; }
    std::string log_note() const override
    {
        const dpdk::worker_counters& k = n_->w().counters();
        std::string tx, rx;
        for (size_t p = 0; p < planes_.size(); ++p) {
            if (p != 0) {
                tx += ',';
                rx += ',';
            }
            tx += std::to_string(k.plane_tx_frames[p]);
            rx += std::to_string(k.plane_rx_frames[p]);
        }
        std::string zc = "; data frames sent in place " + std::to_string(k.tx_zero_copy) + ", payloads copied " +
                         std::to_string(k.tx_payload_copied);
        if (!n_->w().zero_copy()) {
            zc = "; zero copy off";
            for (const dpdk::port_caps& c : n_->ports()) {
                if (!c.zero_copy_note.empty()) {
                    zc += " (" + c.name + ": " + c.zero_copy_note + ")";
                    break;
                }
            }
        }
        return "frames per plane sent " + tx + " received " + rx + zc;
    }
    // Under the context's mutex, like poll(): the worker's region table has one user at
    // a time (the progress thread or the application's thread, never both).
    void mem_added(const void* base, size_t len) override
    {
        if (!n_->w().zero_copy()) {
            return; // the ports take no chains: every payload is built into the frame
        }
        if (++tx_regions_[base] > 1) {
            return; // the same memory again: the worker already knows it
        }
        try {
            n_->w().tx_register(base, len);
        } catch (const std::exception&) {
            tx_regions_.erase(base); // no zero copy from it: its frames are copied
        }
    }
    int mem_removed(const void* base, std::string& why) override
    {
        const auto it = tx_regions_.find(base);
        if (it == tx_regions_.end()) {
            return 0;
        }
        if (it->second > 1) {
            --it->second;
            return 0;
        }
        try {
            // Flushes what is queued and waits for the port to free the frames sent
            // from it in place; the region stays known when they are still held.
            n_->w().tx_deregister(base, k_dereg_wait_ns);
        } catch (const std::exception& e) {
            why = e.what();
            return EBUSY;
        }
        tx_regions_.erase(it);
        return 0;
    }
    void thread_start() override { registered_ = rte_thread_register() == 0; }
    void thread_stop() override
    {
        if (registered_) {
            rte_thread_unregister();
        }
    }

private:
    std::unique_ptr<dpdk::node> n_;
    // How long ibv_dereg_mr waits for a port to free frames sent in place.
    static constexpr uint64_t k_dereg_wait_ns = 1'000'000'000;
    std::vector<uint32_t> planes_;
    std::map<const void*, uint32_t> tx_regions_; // base -> registrations of it
    bool registered_ = false;
};

backend* make(const settings& st, std::string& err)
{
    if (st.plane_addrs.empty()) {
        err = "METAROCE_BACKEND=dpdk needs METAROCE_ADDR: this node's plane-0 address (e.g. "
              "10.0.0.1; the peer's differs), with plane p at +p*256 (10.0.1.1 on plane 1)";
        return nullptr;
    }
    for (size_t p = 0; p < st.plane_addrs.size(); ++p) {
        if (st.plane_addrs[p] != dpdk::plane_ip(st.plane_addrs[0], uint8_t(p))) {
            err = "METAROCE_ADDR: on DPDK plane " + std::to_string(p) + "'s address must be " +
                  dpdk::format_ipv4(dpdk::plane_ip(st.plane_addrs[0], uint8_t(p))) +
                  " (the node address + " + std::to_string(p * 256) + ")";
            return nullptr;
        }
    }
    std::vector<uint16_t> ports = st.dpdk_ports;
    if (ports.empty()) {
        for (uint16_t p = 0; p < st.plane_addrs.size(); ++p) {
            ports.push_back(p);
        }
    }
    if (ports.size() != st.plane_addrs.size()) {
        err = "METAROCE_DPDK_PORTS names " + std::to_string(ports.size()) + " port(s) for " +
              std::to_string(st.plane_addrs.size()) + " plane address(es): one per plane";
        return nullptr;
    }
    std::lock_guard<std::mutex> g(g_mu);
    if (g_open) {
        err = "METAROCE_BACKEND=dpdk: metaroce0 is already open in this process (its DPDK "
              "ports serve one context at a time)";
        return nullptr;
    }
    if (g_eal == eal_state::spent) {
        err = "METAROCE_BACKEND=dpdk: metaroce0 was closed in this process, and DPDK cannot "
              "start again (open the device once per process)";
        return nullptr;
    }
    try {
        if (g_eal == eal_state::none) {
            if (st.eal.empty()) {
                err = "METAROCE_BACKEND=dpdk needs METAROCE_EAL, the EAL arguments (e.g. \"-l 0 "
                      "--no-huge -m 512 --vdev=net_memif0,role=server,socket=/tmp/m.sock\")";
                return nullptr;
            }
            start_eal(st.eal);
            g_eal = eal_state::running;
        }
        for (uint16_t p : ports) {
            if (p >= dpdk::port_count()) {
                const std::string why = dpdk::explain_missing_devices();
                err = "METAROCE_DPDK_PORTS: port " + std::to_string(p) + " does not exist (" +
                      std::to_string(dpdk::port_count()) + " port(s)" +
                      (why.empty() ? ": add --vdev=... to METAROCE_EAL" : ": " + why) + ")";
                return nullptr;
            }
        }
        dpdk::node_params np;
        np.node_addr = st.plane_addrs[0];
        np.ports = ports;
        np.transport = verbs_transport(st, np.transport);
        np.transport.planes = uint8_t(ports.size());
        np.peer_wait_ms = 10'000; // a memif client started beside its server
        auto* b = new dpdk_backend(np, st.plane_addrs);
        g_open = true;
        return b;
    } catch (const std::exception& e) {
        err = std::string("METAROCE_BACKEND=dpdk: ") + e.what();
        return nullptr;
    }
}

} // namespace
} // namespace metaroce::verbs

extern "C" __attribute__((visibility("default"))) metaroce::verbs::backend*
metaroce_verbs_make_dpdk_backend(const metaroce::verbs::settings& st, std::string& err)
{
    return metaroce::verbs::make(st, err);
}
