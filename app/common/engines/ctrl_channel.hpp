// Control messages over stream 0 of one connection: a few receive slots kept posted
// and a few send slots reused as their sends complete. Both programs' hosts own one
// per connection they run tests on.
#pragma once

#include <cstdint>

#include "engines/ctrl_msg.hpp"
#include "metaroce/endpoint.hpp"

namespace metaroce::engines {

class ctrl_channel {
public:
    static constexpr uint32_t k_recv_slots = 8;
    static constexpr uint32_t k_send_slots = 8;
    // Buffer bytes one channel needs.
    static constexpr uint64_t k_bytes = (k_recv_slots + k_send_slots) * sizeof(ctrl_msg);

    ctrl_channel() = default;
    // host/va/lkey: k_bytes of a region with local_write that outlives the channel.
    ctrl_channel(endpoint& ep, conn_id c, uint8_t* host, uint64_t va, uint32_t lkey) noexcept
        : ep_(&ep), conn_(c), host_(host), va_(va), lkey_(lkey)
    {
    }

    // Posts every receive slot.
    post_result open();
    // queue_full when every send slot is still in flight.
    post_result send(const ctrl_msg& m, uint64_t now_ns);
    bool can_send() const noexcept { return sends_posted_ - sends_done_ < k_send_slots; }
    bool sends_done() const noexcept { return sends_posted_ == sends_done_; }
    conn_id conn() const noexcept { return conn_; }

    enum class got : uint8_t { nothing, message, malformed, failed };
    // A completion tagged ctrl_recv or ctrl_send of this connection. `message`: out holds
    // what arrived (its slot is posted again); `failed`: the completion was an error.
    got on_completion(const completion& c, ctrl_msg& out);

private:
    post_result post_recv(uint32_t slot);

    endpoint* ep_ = nullptr;
    conn_id conn_ = k_no_conn;
    uint8_t* host_ = nullptr;
    uint64_t va_ = 0;
    uint32_t lkey_ = 0;
    uint32_t next_send_ = 0;
    uint64_t sends_posted_ = 0;
    uint64_t sends_done_ = 0;
};

} // namespace metaroce::engines
