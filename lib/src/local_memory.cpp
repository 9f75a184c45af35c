// The local memory of work requests: one piece or a gather/scatter list (spec 4.1),
// checked under its lkey for every packet that reads or writes it.
#include <cstring>

#include "endpoint_impl.hpp"

namespace metaroce {

using detail::sge_pool;
using detail::to_post_result;

namespace {

// Runs f(host, len, at) on every piece of bytes [off, off + len) of a work request's
// memory after checking that piece under its lkey; stops at the first failure.
template <typename F>
mr_check for_pieces(const mr_table& mrs, const sge_pool& pool, const sge& one, int32_t list, uint64_t off,
                    uint32_t len, uint32_t need, F&& f) noexcept
{
    auto piece = [&](const sge& e, uint64_t poff, uint32_t n, uint32_t at) {
        uint8_t* host = nullptr;
        const mr_check mc = mrs.check_local(e.lkey, e.addr + poff, n, need, &host);
        if (mc == mr_check::ok && n > 0) {
            f(host, n, at);
        }
        return mc;
    };
    if (list == sge_pool::k_none) {
        return piece(one, off, len, 0);
    }
    mr_check result = mr_check::ok;
    const bool whole = pool.for_range(list, off, len, [&](const sge& e, uint64_t poff, uint32_t n, uint32_t at) {
        result = piece(e, poff, n, at);
        return result == mr_check::ok;
    });
    return whole || result != mr_check::ok ? result : mr_check::out_of_bounds;
}

} // namespace

mr_check endpoint::impl::gather(const sge& one, int32_t list, uint64_t off, uint32_t len, uint8_t* to) noexcept
{
    return for_pieces(mrs, sges, one, list, off, len, 0,
                      [&](const uint8_t* host, uint32_t n, uint32_t at) { std::memcpy(to + at, host, n); });
}

mr_check endpoint::impl::gather_refs(const sge& one, int32_t list, uint64_t off, uint32_t len, tx_frame& f,
                                     bool& fits) noexcept
{
    uint8_t n = 0;
    fits = true;
    const mr_check mc = for_pieces(mrs, sges, one, list, off, len, 0, [&](const uint8_t* host, uint32_t bytes, uint32_t) {
        if (n == f.payload.size()) {
            fits = false;
            return;
        }
        f.payload[n++] = {host, bytes};
    });
    fits = fits && mc == mr_check::ok;
    f.payload_refs = fits ? n : 0;
    f.payload_len = fits ? len : 0;
    return mc;
}

mr_check endpoint::impl::scatter(const sge& one, int32_t list, uint64_t off, std::span<const uint8_t> from) noexcept
{
    return for_pieces(mrs, sges, one, list, off, uint32_t(from.size()), access::local_write,
                      [&](uint8_t* host, uint32_t n, uint32_t at) { std::memcpy(host, from.data() + at, n); });
}

post_result endpoint::impl::check_list(const sge* l, uint32_t n, uint32_t need, uint64_t& total,
                                       bool keys) noexcept
{
    if (n > k_max_sge || l == nullptr) {
        return post_result::too_many_sge;
    }
    total = 0;
    for (uint32_t i = 0; i < n; ++i) {
        uint8_t* host = nullptr;
        if (const mr_check mc = keys ? mrs.check_local(l[i].lkey, l[i].addr, l[i].length, need, &host) : mr_check::ok;
            mc != mr_check::ok) {
            return to_post_result(mc);
        }
        total += l[i].length;
    }
    return total > k_max_msg_len ? post_result::too_long : post_result::ok;
}

void endpoint::impl::consume_recv(detail::stream_state& ss) noexcept
{
    detail::posted_recv& r = ss.rq[ss.rq_consumed % ss.rq_size];
    sges.release(r.sgl);
    r.sgl = sge_pool::k_none;
    ++ss.rq_consumed;
}

// Receives up to the last one an open inbound message has claimed stay: that message
// is already being placed into it.
uint32_t endpoint::impl::withdraw_recvs(connection& c, uint16_t stream) noexcept
{
    detail::stream_state& ss = c.stream(stream);
    uint32_t keep = ss.rq_consumed;
    for (uint32_t i = 0; i < c.rslots.size(); ++i) {
        const detail::recv_slot& rs = c.rslots[i]; // the idle sentinel where no chunk is held
        if (rs.in_use && rs.stream == stream && wire::info(rs.op).consumes_recv &&
            !seq_lt(rs.recv_seq, keep)) {
            keep = rs.recv_seq + 1;
        }
    }
    uint32_t n = 0;
    while (seq_lt(keep, ss.rq_posted)) {
        --ss.rq_posted;
        detail::posted_recv& r = ss.rq[ss.rq_posted % ss.rq_size];
        sges.release(r.sgl);
        r.sgl = sge_pool::k_none;
        ++n;
    }
    return n;
}

bool endpoint::impl::check_msg(detail::send_slot& s) noexcept
{
    uint8_t* host = nullptr;
    if (mrs.check_local(s.wr.local.lkey, s.wr.local.addr, s.wr.local.length, 0, &host) != mr_check::ok) {
        return false;
    }
    s.mr_tag = mrs.epoch();
    return true;
}

bool endpoint::impl::check_msg(detail::recv_slot& rs) noexcept
{
    uint8_t* host = nullptr;
    if (mrs.check_remote(rs.rkey, rs.va, rs.msg_len, access::remote_write, &host) != mr_check::ok) {
        return false;
    }
    rs.mr_tag = mrs.epoch();
    return true;
}

void endpoint::impl::forget_mr_tags() noexcept
{
    for (const auto& cp : conns) {
        if (cp == nullptr) {
            continue;
        }
        for (uint32_t i = 0; i < cp->sq.size(); ++i) {
            if (cp->sq[i].in_use) { // (unheld indexes read the shared idle sentinel)
                cp->sq[i].mr_tag = 0;
            }
        }
        for (uint32_t i = 0; i < cp->rslots.size(); ++i) {
            if (cp->rslots[i].in_use) {
                cp->rslots[i].mr_tag = 0;
            }
        }
    }
}

uint32_t endpoint::impl::orphan_sends(connection& c, uint16_t stream)
{
    drop_orphans(c, false);
    uint32_t n = 0;
    for (int32_t i = c.stream(stream).head; i != detail::k_nil; i = c.sq[i].next_in_stream) {
        detail::send_slot& s = c.sq[i];
        const uint32_t len = s.wr.local.length;
        if (!s.in_use || s.done || s.orphaned || len == 0) {
            continue;
        }
        detail::orphan_copy o;
        o.bytes = std::make_unique<uint8_t[]>(len);
        o.len = len;
        if (s.op != wire::opcode::read_req && gather(s.wr.local, s.sgl, 0, len, o.bytes.get()) != mr_check::ok) {
            continue; // already unreadable: its next packet fails as it would have
        }
        const auto mr = mrs.register_region(o.bytes.get(), len, access::local_write);
        if (!mr) {
            continue; // table full: this request keeps depending on the caller's memory
        }
        o.lkey = mr->lkey;
        o.slot = uint32_t(i);
        o.msn = s.msn;
        sges.release(s.sgl);
        s.sgl = sge_pool::k_none;
        s.wr.local = sge{mr->va, len, mr->lkey};
        s.mr_tag = 0;
        s.orphaned = true;
        c.orphans.push_back(std::move(o));
        ++n;
    }
    return n;
}

void endpoint::impl::drop_orphans(connection& c, bool all) noexcept
{
    std::erase_if(c.orphans, [&](const detail::orphan_copy& o) {
        const detail::send_slot& s = c.sq[o.slot];
        if (!all && s.in_use && s.msn == o.msn) {
            return false;
        }
        mrs.deregister(o.lkey);
        return true;
    });
}

void endpoint::impl::release_lists(connection& c) noexcept
{
    drop_orphans(c, true);
    for (uint32_t i = 0; i < c.sq.size(); ++i) {
        detail::send_slot& s = c.sq[i]; // the idle sentinel where no chunk is held
        if (s.in_use) {
            sges.release(s.sgl);
            s.sgl = sge_pool::k_none;
        }
    }
    for (uint32_t st = 0; st < c.stream_slots(); ++st) {
        detail::stream_state& ss = c.stream(st); // the sentinel's loop does nothing
        while (ss.rq_consumed != ss.rq_posted) {
            consume_recv(ss);
        }
    }
}

} // namespace metaroce
