#include "app.hpp"

#include <rte_lcore.h>
#include <rte_telemetry.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <pthread.h>
#include <thread>

#include "dpdk/port.hpp"
#include "dpdk/stats_json.hpp"
#include "telemetry.hpp"

namespace metaroce::app {

namespace {

// Lock-free, so the SIGINT handler may set it.
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void* control_entry(void* self)
{
    static_cast<application*>(self)->control_loop();
    return nullptr;
}

} // namespace

void application::interrupt() noexcept
{
    g_interrupt.store(true);
}

bool application::interrupted() noexcept
{
    return g_interrupt.load();
}

void application::clear_interrupt() noexcept
{
    g_interrupt.store(false);
}

application::application(const app_config& cfg) : cfg_(cfg)
{
    for (size_t p = 0; p < dpdk::k_max_planes; ++p) {
        admin_down_[p].store(false);
        link_down_[p].store(false);
    }
    // One datapath lane per worker lcore; the main lcore runs the prompt.
    std::vector<unsigned> lcores(cfg_.lcores.begin(), cfg_.lcores.end());
    if (lcores.size() > 1 && cfg_.udp) {
        throw std::invalid_argument("config lcores: " + std::to_string(lcores.size()) +
                                    " lcores given, but the udp backend runs one datapath worker; give one");
    }
    if (lcores.size() > dpdk::k_max_workers) {
        throw std::invalid_argument("config lcores: at most " + std::to_string(dpdk::k_max_workers) + " workers");
    }
    for (size_t i = 0; i < lcores.size(); ++i) {
        const unsigned lc = lcores[i];
        if (!rte_lcore_is_enabled(lc) || lc == rte_get_main_lcore()) {
            throw std::invalid_argument("config lcores[" + std::to_string(i) + "] = " + std::to_string(lc) +
                                        " is not a worker lcore of -l (the main lcore runs the "
                                        "prompt; give e.g. -l 0,1)");
        }
        for (size_t j = 0; j < i; ++j) {
            if (lcores[j] == lc) {
                throw std::invalid_argument("config lcores: lcore " + std::to_string(lc) + " given twice");
            }
        }
    }
    if (lcores.empty()) {
        const unsigned lc = rte_get_next_lcore(-1, 1, 0);
        if (lc >= RTE_MAX_LCORE) {
            throw std::invalid_argument("no worker lcore: the main lcore runs the prompt and the "
                                        "datapath needs another one (e.g. -l 0,1)");
        }
        lcores.push_back(lc);
    }
    lanes_ = datapath::make_lanes(cfg_, &admin_, lcores.size());
    dp_ = lanes_[0].get();
    register_telemetry(*this);
    for (size_t k = 0; k < lanes_.size(); ++k) {
        lanes_[k]->launch(lcores[k]);
    }
    pthread_t t;
    if (rte_ctrl_thread_create(&t, "metaroce-ctrl", nullptr, control_entry, this) == 0) {
        ctrl_thread_ = uint64_t(t);
        ctrl_running_ = true;
    }
}

application::~application()
{
    if (ctrl_running_) {
        ctrl_quit_.store(true);
        pthread_join(pthread_t(ctrl_thread_), nullptr);
    }
    detach_telemetry(); // DPDK cannot unregister: the endpoints answer -ENODEV from now on
    for (auto& l : lanes_) {
        l->quit_and_wait();
    }
}

// Effective plane state = admin up && link up. Only the control thread publishes
// it: to the lcores' driver check (relaxed atomics, seen within a burst or two, no
// lock on the datapath) and to the endpoint (set_plane_admin, run on the owning
// lcore through its mailbox), which moves the plane's paths to the other planes.
void application::publish_planes() noexcept
{
    for (size_t p = 0; p < cfg_.ports.size(); ++p) {
        const bool up = !admin_down_[p].load() && !link_down_[p].load();
        if (up == admin_.up[p].load(std::memory_order_relaxed) && published_[p]) {
            continue;
        }
        admin_.up[p].store(up, std::memory_order_relaxed);
        published_[p] = true;
        for (auto& l : lanes_) {
            datapath* d = l.get();
            d->call([d, p, up] { d->w().ep().set_plane_admin(uint8_t(p), up, d->now_ns()); });
        }
    }
}

void application::control_loop()
{
    while (!ctrl_quit_.load()) {
        for (size_t p = 0; p < cfg_.ports.size(); ++p) {
            // The udp backend's planes are local addresses: no link to watch.
            link_down_[p].store(!cfg_.udp && !dpdk::port_link_up(cfg_.ports[p]));
        }
        publish_planes();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string application::stats_json()
{
    // One snapshot per lane; the sums are of these same snapshots.
    nlohmann::json j;
    dpdk::worker_counters wsum;
    counters tsum;
    for (auto& l : lanes_) {
        dpdk::worker_counters w;
        counters t;
        size_t conns = 0;
        l->call([&] {
            w = l->w().counters();
            t = l->w().ep().stats();
            conns = l->w().ep().connections().size();
        });
        add_lane_counters(wsum, w);
        add_counters(tsum, t, counter_fields());
        if (lanes_.size() > 1) {
            j["workers"].push_back({{"worker", l->index()},
                                    {"lcore", l->lcore()},
                                    {"connections", conns},
                                    {"datapath", dpdk::to_json(w)},
                                    {"transport", dpdk::to_json(t)}});
        }
    }
    j["datapath"] = dpdk::to_json(wsum);
    j["transport"] = dpdk::to_json(tsum);
    return j.dump();
}

std::string application::conns_json()
{
    nlohmann::json j = nlohmann::json::object();
    for (auto& l : lanes_) {
        l->call([&] {
            for (conn_id c : l->w().ep().connections()) {
                if (auto i = l->w().ep().inspect(c)) {
                    j[std::to_string(c)] = {{"peer", dpdk::format_ipv4(i->peer_addr)},
                                            {"state", std::string(to_string(i->state))},
                                            {"paths", i->paths},
                                            {"tx_msgs_completed", i->tx_msgs_completed}};
                    if (lanes_.size() > 1) {
                        j[std::to_string(c)]["worker"] = l->index();
                    }
                }
            }
        });
    }
    return j.dump();
}

std::string application::conns_page_json(size_t start, size_t count)
{
    nlohmann::json rows = nlohmann::json::array();
    size_t total = 0; // over all lanes, in lane order
    for (auto& l : lanes_) {
        l->call([&] {
            const std::vector<conn_id> ids = l->w().ep().connections();
            for (size_t i = 0; i < ids.size(); ++i, ++total) {
                if (total < start || rows.size() >= count) {
                    continue;
                }
                if (auto ci = l->w().ep().inspect(ids[i])) {
                    rows.push_back(dpdk::to_json(*ci, false));
                }
            }
        });
    }
    const size_t next = start + rows.size() < total ? start + rows.size() : 0;
    return nlohmann::json{{"total", total}, {"start", start}, {"next", next}, {"conn", rows}}.dump();
}

std::string application::paths_json(conn_id c)
{
    nlohmann::json j = nlohmann::json::object();
    if (datapath* l = lane_of(c)) {
        l->call([&] {
            if (auto i = l->w().ep().inspect(c)) {
                j = dpdk::to_json(*i, true);
            }
        });
    }
    return j.dump();
}

std::string application::planes_json()
{
    nlohmann::json j = nlohmann::json::object();
    const auto& caps = dp_->ports();
    for (size_t p = 0; p < cfg_.ports.size(); ++p) {
        j[std::to_string(p)] = {{"port", cfg_.udp ? p : cfg_.ports[p]},
                                {"name", caps[p].name},
                                {"address", dpdk::format_ipv4(dpdk::plane_ip(cfg_.address, uint8_t(p)))},
                                {"link_up", !link_down_[p].load()},
                                {"admin_up", !admin_down_[p].load()},
                                {"in_use", admin_.up[p].load()}};
        if (p < cfg_.gateways.size() && cfg_.gateways[p]) {
            j[std::to_string(p)]["gateway"] = dpdk::format_mac(*cfg_.gateways[p]);
        }
    }
    const dpdk::worker_counters w = sum_counters();
    for (size_t p = 0; p < cfg_.ports.size(); ++p) {
        j[std::to_string(p)]["tx_frames"] = w.plane_tx_frames[p];
        j[std::to_string(p)]["rx_frames"] = w.plane_rx_frames[p];
    }
    // Paths and timeouts summed over the lanes; down where any lane detected it down.
    for (auto& l : lanes_) {
        l->call([&] {
            for (const auto& pi : l->w().ep().planes()) {
                if (pi.plane < cfg_.ports.size()) {
                    auto& e = j[std::to_string(pi.plane)];
                    e["detected_up"] = pi.detected_up && e.value("detected_up", true);
                    e["paths"] = e.value("paths", 0u) + pi.paths;
                    e["timeouts"] = e.value("timeouts", uint64_t(0)) + uint64_t(pi.timeouts);
                }
            }
        });
    }
    return j.dump();
}

} // namespace metaroce::app
