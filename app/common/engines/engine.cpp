#include "engines/engine.hpp"

#include <algorithm>

#include "engines/data_pattern.hpp"
#include "engines/engine_makers.hpp"

namespace metaroce::engines {

engine_setup setup_over(endpoint& ep, std::vector<conn_id> conns, const memory_region& area)
{
    engine_setup s;
    s.ep = &ep;
    s.conns = std::move(conns);
    s.area = area;
    s.recv_window = ep.config().transport.rq_depth;
    return s;
}

void latency_summary::add(double us, bool keep)
{
    min_us = count == 0 ? us : std::min(min_us, us);
    max_us = std::max(max_us, us);
    sum_us += us;
    ++count;
    if (keep) {
        samples.push_back(us);
    }
}

void engine::start(const engine_setup& s)
{
    s_ = s;
    result_ = {};
    failure_.clear();
    stopped_ = false;
    const size_t n = s.conns.size();
    posted_.assign(n, 0);
    completed_.assign(n, 0);
    limit_.assign(n, s.iters);
    recv_posted_.assign(n, 0);
    recv_done_.assign(n, 0);
    if (n == 0 || s.slots == 0 || !fits(uint64_t(s.slots) * s.size)) {
        fail("size " + std::to_string(s.size) + " x " + std::to_string(s.slots) +
             " slot(s) does not fit the " + std::to_string(s.area.length) + "-byte area");
        return;
    }
    prepare();
}

void engine::on_completion(const completion& c, uint64_t now_ns)
{
    const wr_tag t = wr_tag::of(c.wr_id);
    const size_t ci = t.index;
    if (ci >= posted_.size()) {
        return;
    }
    const bool recv = t.kind == wr_kind::active_recv || t.kind == wr_kind::passive_recv;
    ++(recv ? recv_done_ : completed_)[ci];
    if (c.status != wc_status::success) {
        ++result_.errors;
        return;
    }
    if (recv) {
        on_recv_done(ci, t.seq, c, now_ns);
    } else {
        on_send_done(ci, t.seq, c, now_ns);
    }
}

void engine::on_send_done(size_t, uint64_t, const completion&, uint64_t)
{
    ++result_.iterations;
    result_.bytes += s_.size;
}

void engine::on_recv_done(size_t, uint64_t, const completion&, uint64_t) {}

void engine::check(uint64_t) {}

void engine::stop() noexcept
{
    stopped_ = true;
    for (size_t ci = 0; ci < limit_.size(); ++ci) {
        limit_[ci] = std::min(limit_[ci], posted_[ci]);
    }
}

void engine::extend(size_t index, uint64_t n) noexcept
{
    if (index < limit_.size() && limit_[index] != k_forever) {
        limit_[index] += n;
    }
}

bool engine::idle() const noexcept
{
    return completed_ == posted_;
}

bool engine::finished() const noexcept
{
    return idle() && posted_ == limit_;
}

std::vector<uint64_t> engine::unused_receives() const
{
    std::vector<uint64_t> out(recv_posted_.size());
    for (size_t ci = 0; ci < out.size(); ++ci) {
        out[ci] = recv_posted_[ci] - recv_done_[ci];
    }
    return out;
}

uint64_t engine::busiest() const noexcept
{
    uint64_t n = 0;
    for (size_t ci = 0; ci < completed_.size(); ++ci) {
        n = std::max(n, std::max(completed_[ci], recv_done_[ci]));
    }
    return n;
}

void engine::verify(uint64_t peer_busiest)
{
    result_.bad_bytes = 0;
    result_.checked = false;
    check(peer_busiest);
}

void engine::compare(uint64_t off, uint64_t len, uint64_t from)
{
    result_.bad_bytes += count_mismatches(s_.area.host + off, len, from);
    result_.checked = true;
}

post_result engine::post(size_t ci, wr_opcode op, uint64_t local_off, uint64_t remote_off,
                         uint64_t seq, uint16_t stream, uint64_t now_ns)
{
    send_wr wr;
    wr.wr_id = wr_tag{role_ == role::active ? wr_kind::active_send : wr_kind::passive_send,
                      uint16_t(ci), seq}
                   .id();
    wr.op = op;
    wr.stream = stream;
    wr.local = sge{s_.area.va + local_off, uint32_t(s_.size), s_.area.lkey};
    if (op != wr_opcode::send) {
        wr.remote_va = s_.remote_va + remote_off;
        wr.rkey = s_.rkey;
    }
    return s_.ep->post_send(s_.conns[ci], wr, now_ns);
}

post_result engine::post_receive(size_t ci, uint64_t local_off, uint64_t seq, uint16_t stream)
{
    recv_wr wr;
    wr.wr_id = wr_tag{role_ == role::active ? wr_kind::active_recv : wr_kind::passive_recv,
                      uint16_t(ci), seq}
                   .id();
    wr.local = sge{s_.area.va + local_off, uint32_t(s_.size), s_.area.lkey};
    return s_.ep->post_recv(s_.conns[ci], stream, wr);
}

void engine::keep_receives(uint16_t stream)
{
    for (size_t ci = 0; ci < recv_posted_.size(); ++ci) {
        while (!stopped_ && recv_posted_[ci] < s_.iters &&
               recv_posted_[ci] - recv_done_[ci] < s_.recv_window) {
            const uint64_t k = recv_posted_[ci];
            if (!posted_ok(post_receive(ci, (k % s_.slots) * s_.size, k, stream), "post_recv")) {
                return;
            }
            ++recv_posted_[ci];
        }
    }
}

bool engine::posted_ok(post_result r, const char* what)
{
    if (r != post_result::ok && r != post_result::queue_full && failure_.empty()) {
        failure_ = std::string(what) + " (" + test_name(kind_) + "): " + std::string(to_string(r));
    }
    return r == post_result::ok;
}

bool engine::fail(std::string why)
{
    if (failure_.empty()) {
        failure_ = std::move(why);
    }
    return false;
}

std::unique_ptr<engine> make_engine(test_kind t, role r)
{
    switch (t) {
    case test_kind::write_bw: return make_write_bw(r);
    case test_kind::send_bw: return make_send_bw(r);
    case test_kind::read_bw: return make_read_bw(r);
    case test_kind::write_lat: return make_write_lat(r);
    case test_kind::send_lat: return make_send_lat(r);
    }
    return nullptr;
}

} // namespace metaroce::engines
