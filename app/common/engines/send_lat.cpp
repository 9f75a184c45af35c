// send_lat: ping-pong of SENDs. The active side posts the receive for the echo, then
// the ping; the passive side answers every ping it receives with its bytes.
#include <cstring>

#include "engines/bw_stream.hpp"
#include "engines/ctrl_msg.hpp"
#include "engines/engine_makers.hpp"
#include "engines/latency.hpp"

namespace metaroce::engines {

namespace {

class send_lat_active final : public ping_pong {
public:
    send_lat_active() noexcept : ping_pong(test_kind::send_lat, role::active) {}

    void pump(uint64_t now_ns) override
    {
        if (waiting_ || !may_post(0)) {
            return;
        }
        if (recv_posted_[0] == posted_[0]) {
            if (!posted_ok(post_receive(0, s_.echo_offset, next_, k_reply_stream), "post_recv")) {
                return;
            }
            ++recv_posted_[0];
        }
        if (posted_ok(post(0, wr_opcode::send, 0, 0, next_, k_request_stream, now_ns), "post_send")) {
            sent(now_ns);
        }
    }

private:
    void on_recv_done(size_t, uint64_t, const completion& c, uint64_t now_ns) override
    {
        result_.bad_lengths += c.byte_len != s_.size;
        echoed(now_ns);
    }
    void check(uint64_t) override { check_echo(s_.size); }
};

class send_lat_passive final : public engine {
public:
    send_lat_passive() noexcept : engine(test_kind::send_lat, role::passive) {}

    void pump(uint64_t now_ns) override
    {
        keep_receives(k_request_stream);
        for (size_t ci = 0; ci < owed_.size(); ++ci) {
            while (owed_[ci] > 0 && posted_ok(post(ci, wr_opcode::send, 0, 0, posted_[ci], k_reply_stream, now_ns),
                                              "post_send (send_lat echo)")) {
                --owed_[ci];
                ++posted_[ci];
            }
        }
    }

private:
    bool prepare() override
    {
        s_.slots = 1; // every ping lands at the start of the area and is echoed from there
        std::memset(s_.area.host, 0, s_.size);
        owed_.assign(posted_.size(), 0);
        keep_receives(k_request_stream);
        return true;
    }
    void on_recv_done(size_t ci, uint64_t, const completion& c, uint64_t now_ns) override
    {
        result_.bad_lengths += c.byte_len != s_.size;
        ++owed_[ci];
        pump(now_ns);
    }
    void check(uint64_t) override { compare(0, s_.size, 0); }

    std::vector<uint64_t> owed_; // echoes to send, per connection
};

} // namespace

std::unique_ptr<engine> make_send_lat(role r)
{
    return make_side<send_lat_active, send_lat_passive>(r);
}

} // namespace metaroce::engines
