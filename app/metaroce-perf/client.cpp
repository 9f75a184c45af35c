// The client's side of a run: the region exchange, then per message size perftest's
// start / done / verdict around an active engine, and the table.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <stdexcept>

#include "engines/run_protocol.hpp"
#include "session.hpp"

namespace metaroce::perf {

using namespace engines;

namespace {

constexpr uint64_t k_min_region = 8ull << 20; // bandwidth tests cycle through it

uint64_t region_len(const options& o)
{
    const uint64_t max_size = o.all_sizes ? (1ull << 23) : o.size;
    return std::max(k_min_region, 2 * max_size);
}

std::vector<uint64_t> sizes_of(const options& o)
{
    std::vector<uint64_t> sizes;
    if (o.all_sizes) {
        for (uint64_t s = 2; s <= (1ull << 23); s *= 2) {
            sizes.push_back(s);
        }
    } else {
        sizes.push_back(o.size);
    }
    return sizes;
}

} // namespace

int session::run_client()
{
    // Allocate and fill the buffer before connecting: nothing polls meanwhile, and on a
    // loaded host that can take longer than the peer's idle timeout.
    alloc_region(region_len(o_));
    connect_all();
    ctrl_msg h = make_ctrl(ctrl_type::region);
    h.test = uint8_t(o_.test);
    h.qps = wire::be16_t::from_host(uint16_t(o_.qps));
    h.len = wire::be64_t::from_host(data_.size());
    h.va = wire::be64_t::from_host(data_mr_.va);
    h.rkey = wire::be32_t::from_host(data_mr_.rkey);
    h.a = wire::be64_t::from_host(share_.count);
    send_ctrl(h);
    const ctrl_msg r = expect_ctrl(ctrl_type::region, "the server's hello reply", true);
    check_peer_workers(r.a.host(), "server");
    remote_va_ = r.va.host();
    remote_rkey_ = r.rkey.host();

    print_preamble();
    std::vector<bw_result> bw_rows;
    std::vector<lat_result> lat_rows;
    uint64_t bad_total = 0;
    for (uint64_t size : sizes_of(o_)) {
        engine_setup s = area();
        s.remote_va = remote_va_;
        s.rkey = remote_rkey_;
        s.size = size;
        s.slots = uint32_t(std::clamp<uint64_t>(half_ / size, 1, o_.is_bw() ? o_.tx_depth : 1));
        s.depth = o_.tx_depth;
        s.iters = o_.duration_s != 0 ? k_forever : o_.iters;
        s.echo_offset = half_;
        send_ctrl(start_msg(o_.test, s, data_mr_.va + half_, data_mr_.rkey));
        expect_ctrl(ctrl_type::ready, "the server to get ready");
        start_engine(role::active, s);
        ctrl_msg d;
        if (o_.is_bw()) {
            bw_rows.push_back(client_bw(size));
            d = done_msg(*eng_);
            d.a = wire::be64_t::from_host(std::bit_cast<uint64_t>(bw_rows.back().peak));
            d.b = wire::be64_t::from_host(uint64_t(bw_rows.back().seconds * 1e9));
        } else {
            lat_rows.push_back(client_lat(size));
            d = done_msg(*eng_);
        }
        uint64_t local_bad = 0;
        if (o_.verify) {
            eng_->verify(0);
            local_bad = eng_->result().bad_bytes + eng_->result().bad_lengths;
        }
        bad_total += local_bad + finish_size(d).bad;
        eng_.reset();
        if (!own_report()) {
            continue;
        } else if (o_.output != output_kind::full) {
            o_.is_bw() ? print_bw_number(o_, bw_rows.back()) : print_lat_number(lat_rows.back());
        } else if (o_.is_bw()) {
            print_bw_row(bw_rows.back());
        } else {
            print_lat_row(lat_rows.back());
        }
    }
    if (o_.output == output_kind::full && own_report()) {
        print_dashes();
    }
    send_ctrl(make_ctrl(ctrl_type::bye));
    wait([&] { return ctrl_.sends_done(); }, "the server to take bye");
    result_ = session_result{bw_rows, lat_rows, bad_total, true};
    if (!own_report()) {
        close_all();
        return bad_total != 0 ? 2 : 0;
    }
    const std::string state = !o_.verify ? "skipped" : bad_total == 0 ? "ok" : "FAILED";
    print_verification(o_, o_.verify, bad_total);
    if (!o_.out_json.empty() &&
        !write_json(o_.out_json, o_, info_, bw_rows, lat_rows, o_.verify && bad_total == 0, state)) {
        return 1;
    }
    close_all();
    if (bad_total != 0) {
        return 2;
    }
    return check_limits(o_, bw_rows) ? 0 : 1;
}

// Sends done until the server has no receive left to fill, then takes its verdict.
verdict_info session::finish_size(ctrl_msg done)
{
    for (;;) {
        send_ctrl(done);
        const ctrl_msg m = wait_ctrl("the server's verdict");
        if (m.type == ctrl_type::verdict) {
            return read_verdict(m);
        }
        if (m.type != ctrl_type::more) {
            throw std::runtime_error("protocol: expected verdict");
        }
        apply_more(*eng_, m);
        wait([&] { return eng_->finished(); }, "the requests the server's receives wait for");
        const ctrl_msg again = done_msg(*eng_);
        done.iters = again.iters;
        done.len = again.len;
    }
}

bw_result session::client_bw(uint64_t size)
{
    const uint64_t start = clk_.now_ns();
    const uint64_t stop_at =
        o_.duration_s != 0 ? start + uint64_t(o_.duration_s) * 1'000'000'000ull : UINT64_MAX;
    // --timeout bounds a stall (no completion for that long), not the run: -a's 8 MiB
    // messages take long on a software link while still progressing.
    const uint64_t stall_ns = uint64_t(o_.timeout_s) * 1'000'000'000ull;
    uint64_t progress_at = start;
    bw_timing timing(start, uint64_t(o_.tx_depth) * o_.qps);
    while (!eng_->finished()) {
        if (clk_.now_ns() >= stop_at) {
            eng_->stop();
        }
        const uint64_t before = eng_->result().iterations;
        step();
        if (const uint64_t n = eng_->result().iterations - before; n != 0) {
            timing.completed(now_, n);
            progress_at = now_;
        }
        check_running();
        if (now_ - progress_at > stall_ns) {
            throw std::runtime_error("no completion for " + std::to_string(o_.timeout_s) +
                                     " s during the test (" +
                                     std::to_string(eng_->result().iterations) + " completions)");
        }
    }
    return bw_row(o_, size, eng_->result().iterations, timing);
}

lat_result session::client_lat(uint64_t size)
{
    // Timed out on a missing echo, not on the whole run.
    uint64_t seen = 0;
    uint64_t progress_at = clk_.now_ns();
    while (!eng_->finished()) {
        step();
        check_running();
        if (eng_->result().iterations != seen) {
            seen = eng_->result().iterations;
            progress_at = now_;
        } else if (now_ - progress_at > uint64_t(o_.timeout_s) * 1'000'000'000ull) {
            throw std::runtime_error("timed out after " + std::to_string(o_.timeout_s) +
                                     " s waiting for the " + test_name(o_.test) + " echo");
        }
    }
    return summarise_latency(size, eng_->result().latency.samples);
}

} // namespace metaroce::perf
