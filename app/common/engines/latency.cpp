#include "engines/latency.hpp"

#include <cstring>

#include "engines/data_pattern.hpp"

namespace metaroce::engines {

bool ping_pong::prepare()
{
    if (!fits(s_.echo_offset + s_.size) || s_.echo_offset < s_.size) {
        return fail("the echo area does not fit beside the message");
    }
    fill_pattern(s_.area.host, s_.size);
    std::memset(echo(), 0, s_.size);
    waiting_ = false;
    next_ = 0;
    return true;
}

void ping_pong::sent(uint64_t now_ns) noexcept
{
    ++posted_[0];
    sent_at_ = now_ns;
    waiting_ = true;
}

void ping_pong::echoed(uint64_t now_ns)
{
    result_.latency.add(double(now_ns - sent_at_) / 2e3, s_.keep_samples);
    ++result_.iterations;
    result_.bytes += s_.size;
    waiting_ = false;
    ++next_;
}

void ping_pong::check_echo(uint64_t len)
{
    compare(s_.echo_offset, len, 0);
}

} // namespace metaroce::engines
