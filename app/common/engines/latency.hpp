// What the two latency tests share on their active side: one ping in flight on the
// first connection, its start time, and the echo that ends it.
#pragma once

#include "engines/engine.hpp"

namespace metaroce::engines {

class ping_pong : public engine {
public:
    using engine::engine;
    bool idle() const noexcept override { return !waiting_ && engine::idle(); }

protected:
    // Fills the message with the pattern and clears the echo area.
    bool prepare() override;
    // A ping's own completion: the iteration ends with its echo.
    void on_send_done(size_t, uint64_t, const completion&, uint64_t) override {}
    // Ping i went out at now_ns.
    void sent(uint64_t now_ns) noexcept;
    // Its echo arrived at now_ns: one half round trip.
    void echoed(uint64_t now_ns);
    // The last echo, compared with the pattern (`len` bytes of it).
    void check_echo(uint64_t len);
    uint8_t* echo() const noexcept { return s_.area.host + s_.echo_offset; }

    bool waiting_ = false;
    uint64_t next_ = 0;  // the ping to send next

private:
    uint64_t sent_at_ = 0;
};

// Ping i carries this in its last byte (never 0, so a cleared area never matches).
constexpr uint8_t ping_tag(uint64_t i) noexcept
{
    return uint8_t(i % 255 + 1);
}

} // namespace metaroce::engines
