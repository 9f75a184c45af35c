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
    dp_ = std::make_unique<datapath>(cfg_, &admin_);
    unsigned lcore = RTE_MAX_LCORE;
    if (!cfg_.lcores.empty()) {
        lcore = cfg_.lcores[0];
        if (!rte_lcore_is_enabled(lcore) || lcore == rte_get_main_lcore()) {
            throw std::invalid_argument("config lcores[0] = " + std::to_string(lcore) +
                                        " is not a worker lcore of -l (the main lcore runs the "
                                        "prompt; give e.g. -l 0,1)");
        }
    } else {
        lcore = rte_get_next_lcore(-1, 1, 0);
        if (lcore >= RTE_MAX_LCORE) {
            throw std::invalid_argument("no worker lcore: the main lcore runs the prompt and the "
                                        "datapath needs another one (e.g. -l 0,1)");
        }
    }
    register_telemetry(*this);
    dp_->launch(lcore);
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
    dp_->quit_and_wait();
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
        dp_->call([this, p, up] {
            dp_->w().ep().set_plane_admin(uint8_t(p), up, dp_->now_ns());
        });
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
    nlohmann::json j;
    dp_->call([&] {
        j["datapath"] = dpdk::to_json(dp_->w().counters());
        j["transport"] = dpdk::to_json(dp_->w().ep().stats());
    });
    return j.dump();
}

std::string application::conns_json()
{
    nlohmann::json j = nlohmann::json::object();
    dp_->call([&] {
        for (conn_id c : dp_->w().ep().connections()) {
            if (auto i = dp_->w().ep().inspect(c)) {
                j[std::to_string(c)] = {{"peer", dpdk::format_ipv4(i->peer_addr)},
                                        {"state", std::string(to_string(i->state))},
                                        {"paths", i->paths},
                                        {"tx_msgs_completed", i->tx_msgs_completed}};
            }
        }
    });
    return j.dump();
}

std::string application::conns_page_json(size_t start, size_t count)
{
    nlohmann::json rows = nlohmann::json::array();
    size_t total = 0;
    dp_->call([&] {
        const std::vector<conn_id> ids = dp_->w().ep().connections();
        total = ids.size();
        for (size_t i = start; i < ids.size() && rows.size() < count; ++i) {
            if (auto ci = dp_->w().ep().inspect(ids[i])) {
                nlohmann::json r = dpdk::to_json(*ci, false);
                rows.push_back(r);
            }
        }
    });
    const size_t next = start + rows.size() < total ? start + rows.size() : 0;
    return nlohmann::json{{"total", total}, {"start", start}, {"next", next}, {"conn", rows}}.dump();
}

std::string application::paths_json(conn_id c)
{
    nlohmann::json j = nlohmann::json::object();
    dp_->call([&] {
        if (auto i = dp_->w().ep().inspect(c)) {
            j = dpdk::to_json(*i, true);
        }
    });
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
    dp_->call([&] {
        const auto& w = dp_->w().counters();
        for (size_t p = 0; p < cfg_.ports.size(); ++p) {
            j[std::to_string(p)]["tx_frames"] = w.plane_tx_frames[p];
            j[std::to_string(p)]["rx_frames"] = w.plane_rx_frames[p];
        }
        for (const auto& pi : dp_->w().ep().planes()) {
            if (pi.plane < cfg_.ports.size()) {
                auto& e = j[std::to_string(pi.plane)];
                e["detected_up"] = pi.detected_up;
                e["paths"] = pi.paths;
                e["timeouts"] = pi.timeouts;
            }
        }
    });
    return j.dump();
}

} // namespace metaroce::app
