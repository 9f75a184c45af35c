#include "udp/idle_poller.hpp"

#include <algorithm>

#include <poll.h>
#include <time.h>

namespace metaroce::udp {

void idle_poller::poll(uint64_t now_ns)
{
    if (n_.poll(now_ns) || n_.counters().tx_would_block != would_block_) {
        would_block_ = n_.counters().tx_would_block; // a full socket: retry at once
        idle_ = 0;
        return;
    }
    if (++idle_ < k_idle_passes) {
        return;
    }
    idle_ = 0;
    const uint64_t next = n_.ep().next_timer();
    if (next <= now_ns) {
        return;
    }
    const uint64_t t = std::min(next - now_ns, max_nap_ns_);
    pollfd pfd{n_.wait_fd(), POLLIN, 0};
    const timespec ts{time_t(t / 1'000'000'000), long(t % 1'000'000'000)};
    (void)ppoll(&pfd, 1, &ts, nullptr);
}

} // namespace metaroce::udp
