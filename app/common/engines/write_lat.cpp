// write_lat: ping-pong of WRITEs. Ping i carries ping_tag(i) in its last byte, which
// lands last (spec 8.3); the passive side polls for it and writes its area back into
// the active side's echo area, where the active side polls for the same tag.
#include <cstring>

#include "engines/bw_stream.hpp"
#include "engines/ctrl_msg.hpp"
#include "engines/engine_makers.hpp"
#include "engines/latency.hpp"

namespace metaroce::engines {

namespace {

uint8_t last_byte(const uint8_t* p, uint64_t size) noexcept
{
    return *static_cast<const volatile uint8_t*>(p + size - 1); // written by the datapath
}

class write_lat_active final : public ping_pong {
public:
    write_lat_active() noexcept : ping_pong(test_kind::write_lat, role::active) {}

    void pump(uint64_t now_ns) override
    {
        if (waiting_ && last_byte(echo(), s_.size) == ping_tag(next_)) {
            echoed(now_ns);
        }
        if (!waiting_ && may_post(0)) {
            s_.area.host[s_.size - 1] = ping_tag(next_);
            if (posted_ok(post(0, wr_opcode::write, 0, 0, next_, k_request_stream, now_ns), "post_send")) {
                sent(now_ns);
            }
        }
    }

private:
    void check(uint64_t) override { check_echo(s_.size - 1); } // the last byte is the tag
};

class write_lat_passive final : public engine {
public:
    write_lat_passive() noexcept : engine(test_kind::write_lat, role::passive) {}

    void pump(uint64_t now_ns) override
    {
        if (next_ < s_.iters && last_byte(s_.area.host, s_.size) == ping_tag(next_)) {
            if (posted_ok(post(0, wr_opcode::write, 0, 0, next_, k_reply_stream, now_ns),
                          "post_send (write_lat echo)")) {
                ++posted_[0];
                ++next_;
            }
        }
    }

private:
    bool prepare() override
    {
        std::memset(s_.area.host, 0, s_.size);
        next_ = 0;
        return true;
    }
    void check(uint64_t) override { compare(0, s_.size - 1, 0); }

    uint64_t next_ = 0; // the ping expected next
};

} // namespace

std::unique_ptr<engine> make_write_lat(role r)
{
    return make_side<write_lat_active, write_lat_passive>(r);
}

} // namespace metaroce::engines
