#include "engines/bw_stream.hpp"

#include <cstring>

#include "engines/ctrl_msg.hpp"
#include "engines/data_pattern.hpp"

namespace metaroce::engines {

bool bw_stream::prepare()
{
    fill_pattern(s_.area.host, uint64_t(s_.slots) * s_.size);
    return true;
}

void bw_stream::pump(uint64_t now_ns)
{
    for (size_t ci = 0; ci < posted_.size(); ++ci) {
        while (may_post(ci) && posted_[ci] - completed_[ci] < s_.depth) {
            const uint64_t i = posted_[ci];
            const uint64_t off = (i % s_.slots) * s_.size;
            if (!posted_ok(post(ci, op_, off, off, i, k_request_stream, now_ns), "post_send")) {
                break;
            }
            ++posted_[ci];
        }
    }
}

bool bw_sink::prepare()
{
    std::memset(s_.area.host, 0, uint64_t(s_.slots) * s_.size);
    return true;
}

void bw_sink::check(uint64_t peer_busiest)
{
    compare(0, slot_bytes(peer_busiest), 0);
}

} // namespace metaroce::engines
