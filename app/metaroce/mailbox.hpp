// How the prompt, the control thread and telemetry run code on the datapath lcore:
// requests are pointers in an MPSC rte_ring that the lcore drains between bursts, so
// the single-threaded endpoint is only ever touched there (no lock on the datapath).
#pragma once

#include <cstdint>
#include <functional>

struct rte_ring;

namespace metaroce::app {

class mailbox {
public:
    mailbox();
    ~mailbox();
    mailbox(const mailbox&) = delete;
    mailbox& operator=(const mailbox&) = delete;

    // Any thread: queues fn and waits for the lcore to run it; false after timeout_ms
    // (the lcore still runs it later) or when the ring is full.
    bool call(std::function<void()> fn, uint64_t timeout_ms);
    // The lcore: runs a few queued requests.
    void drain();

private:
    rte_ring* ring_ = nullptr;
};

} // namespace metaroce::app
