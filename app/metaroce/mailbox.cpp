#include "mailbox.hpp"

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "dpdk/eal.hpp"

namespace metaroce::app {

namespace {
struct request {
    std::function<void()> fn;
    std::atomic<bool> done{false};
};
} // namespace

mailbox::mailbox()
{
    // One per datapath lane: ring names must be unique in the process.
    static std::atomic<unsigned> next{0};
    const std::string name = "mr_mailbox" + std::to_string(next.fetch_add(1));
    ring_ = rte_ring_create(name.c_str(), 64, int(rte_socket_id()), RING_F_SC_DEQ);
    if (ring_ == nullptr) {
        throw dpdk::dpdk_error("cannot create the datapath mailbox ring");
    }
}

mailbox::~mailbox()
{
    rte_ring_free(ring_);
}

bool mailbox::call(std::function<void()> fn, uint64_t timeout_ms)
{
    auto req = std::make_shared<request>();
    req->fn = std::move(fn);
    auto* handle = new std::shared_ptr<request>(req);
    if (rte_ring_mp_enqueue(ring_, handle) != 0) {
        delete handle;
        return false;
    }
    const uint64_t until = rte_get_timer_cycles() + rte_get_timer_hz() * timeout_ms / 1000;
    while (!req->done.load(std::memory_order_acquire)) {
        if (rte_get_timer_cycles() > until) {
            return false; // the lcore still holds its reference and frees it later
        }
        std::this_thread::yield();
    }
    return true;
}

void mailbox::drain()
{
    void* p = nullptr;
    for (int i = 0; i < 4 && rte_ring_sc_dequeue(ring_, &p) == 0; ++i) {
        auto* handle = static_cast<std::shared_ptr<request>*>(p);
        (*handle)->fn();
        (*handle)->done.store(true, std::memory_order_release);
        delete handle;
    }
}

} // namespace metaroce::app
