#include "engines/ctrl_channel.hpp"

#include <cstring>

#include "engines/wr_tag.hpp"

namespace metaroce::engines {

post_result ctrl_channel::post_recv(uint32_t slot)
{
    recv_wr wr;
    wr.wr_id = wr_tag{wr_kind::ctrl_recv, 0, slot}.id();
    wr.local = sge{va_ + slot * sizeof(ctrl_msg), sizeof(ctrl_msg), lkey_};
    return ep_->post_recv(conn_, k_ctrl_stream, wr);
}

post_result ctrl_channel::open()
{
    for (uint32_t s = 0; s < k_recv_slots; ++s) {
        if (const post_result r = post_recv(s); r != post_result::ok) {
            return r;
        }
    }
    return post_result::ok;
}

post_result ctrl_channel::send(const ctrl_msg& m, uint64_t now_ns)
{
    if (!can_send()) {
        return post_result::queue_full;
    }
    const uint32_t slot = k_recv_slots + next_send_;
    std::memcpy(host_ + slot * sizeof(ctrl_msg), &m, sizeof m);
    send_wr wr;
    wr.wr_id = wr_tag{wr_kind::ctrl_send, 0, slot}.id();
    wr.op = wr_opcode::send;
    wr.stream = k_ctrl_stream;
    wr.local = sge{va_ + slot * sizeof(ctrl_msg), sizeof(ctrl_msg), lkey_};
    const post_result r = ep_->post_send(conn_, wr, now_ns);
    if (r == post_result::ok) {
        next_send_ = (next_send_ + 1) % k_send_slots;
        ++sends_posted_;
    }
    return r;
}

ctrl_channel::got ctrl_channel::on_completion(const completion& c, ctrl_msg& out)
{
    const wr_tag tag = wr_tag::of(c.wr_id);
    if (tag.kind == wr_kind::ctrl_send) {
        ++sends_done_;
        return c.status == wc_status::success ? got::nothing : got::failed;
    }
    if (c.status != wc_status::success) {
        return got::failed;
    }
    const uint32_t slot = uint32_t(tag.seq);
    std::memcpy(&out, host_ + slot * sizeof(ctrl_msg), sizeof out);
    post_recv(slot); // a failure shows as the connection's error
    if (c.byte_len != sizeof out || out.magic.host() != k_ctrl_magic) {
        return got::malformed;
    }
    return got::message;
}

} // namespace metaroce::engines
