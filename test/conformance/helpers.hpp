// Small building blocks the conformance tests share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "suite.hpp"

namespace metaroce::conformance {

inline std::string op_name(const rx_pkt& p)
{
    return p.ok() ? std::string(wire::info(p.op()).name) : "malformed packet";
}

inline std::string describe(const std::vector<rx_pkt>& v)
{
    std::string s;
    for (size_t i = 0; i < v.size() && i < 4; ++i) {
        s += (s.empty() ? "" : ", ") + op_name(v[i]);
        if (v[i].is(wire::opcode::nak)) {
            s += " reason " + std::to_string(uint8_t(v[i].v().nak->reason));
        }
        if (v[i].is(wire::opcode::ack)) {
            s += " cum " + std::to_string(v[i].v().psn);
        }
    }
    return v.size() > 4 ? s + ", ..." : s;
}

inline bool all_zero(const std::vector<uint8_t>& v)
{
    return std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0; });
}

// Writes a big-endian field into a built packet (to break it on purpose).
inline void poke32(std::vector<uint8_t>& b, size_t off, uint32_t v)
{
    for (int i = 0; i < 4; ++i) {
        b[off + size_t(i)] = uint8_t(v >> (24 - 8 * i));
    }
}
inline void poke16(std::vector<uint8_t>& b, size_t off, uint16_t v)
{
    b[off] = uint8_t(v >> 8);
    b[off + 1] = uint8_t(v);
}

// Byte offsets in a data packet (spec 3.1, 3.2, 3.3).
namespace at {
inline constexpr size_t version = 0, opcode = 1, flags = 2, dst_conn = 4, psn = 8, path = 12;
inline constexpr size_t stream = 20, msn = 24, ssn = 28, recv_seq = 32, msg_len = 36, offset = 40;
inline constexpr size_t va = 44, rkey = 52;
} // namespace at

// Expects one ACK for path `path` and checks its cumulative ack.
inline rx_pkt expect_ack(ctx& x, const tconn& c, uint8_t path, uint32_t cum, const std::string& what)
{
    const rx_pkt a = x.p.must(tester::ack_for(c, path), x.p.reply_ns(), "ACK " + what);
    x.check(a.v().psn == cum, "ACK " + what + ": cumulative ack " + std::to_string(a.v().psn - c.isn) +
                                  " (relative to our ISN), expected " + std::to_string(cum - c.isn));
    return a;
}

inline rx_pkt expect_nak(ctx& x, const tconn& c, wire::nak_reason r, const std::string& what)
{
    const rx_pkt n = x.p.must(tester::reply_for(c), x.p.reply_ns(), "NAK " + what);
    x.check(n.is(wire::opcode::nak), "expected a NAK " + what + ", got " + describe({n}));
    x.check(n.v().nak->reason == r, "NAK " + what + " has reason " +
                                        std::to_string(uint8_t(n.v().nak->reason)) + ", expected " +
                                        std::to_string(uint8_t(r)));
    return n;
}

// A single-packet WRITE of `data` at region offset `off` (numbered, not sent).
inline sent_msg write_msg(tester& p, tconn& c, const region& r, uint64_t off,
                          const std::vector<uint8_t>& data, int path = 0)
{
    msg_spec m;
    m.op = wire::opcode::write;
    m.va = r.va + off;
    m.rkey = r.rkey;
    m.payload = data;
    m.path = path;
    return p.build_message(c, m);
}

// ---- the IUT as requester ------------------------------------------------------

inline constexpr uint64_t k_remote_va = 0x500000001000ull;
inline constexpr uint32_t k_remote_rkey = 0x11223344u;

inline region src_region(ctx& x, uint64_t len, uint8_t seed)
{
    const region r = x.mr(len, access::local_write);
    x.fill(r, 0, pattern(len, seed));
    return r;
}

inline send_req req(wr_opcode op, uint16_t stream, const region& r, uint64_t off, uint32_t len, uint64_t wr_id)
{
    send_req s;
    s.op = op;
    s.stream = stream;
    s.local = r;
    s.offset = off;
    s.length = len;
    s.remote_va = k_remote_va;
    s.rkey = k_remote_rkey;
    s.wr_id = wr_id;
    return s;
}

inline bool is_retx(const rx_pkt& p)
{
    return (p.v().flags & wire::bth_flag::retx) != 0;
}

// New (not resent) data packets of the connection on streams >= 2, within the window.
// How long the first packet of a window may take to show on a real clock, where nothing
// the IUT could send meanwhile (no packet of it is outstanding) would be counted.
inline constexpr uint64_t k_patient_ns = 200'000'000;

// patient_ns: on a real clock, how long the first packet may take (a loaded host can keep
// the IUT off its cores for milliseconds); the window then runs from that packet. Only for
// bursts where nothing the IUT sends late could be counted (no timer of its is armed).
inline std::vector<rx_pkt> new_packets(ctx& x, const tconn& c, uint64_t window, size_t stop_at = SIZE_MAX,
                                       uint64_t patient_ns = 0)
{
    // A burst (window == burst_ns) on a real clock also ends after a quiet gap, so the
    // tester answers it well before the IUT's timers fire.
    const uint64_t gap = window == x.p.burst_ns() ? x.p.burst_gap_ns() : 0;
    std::vector<rx_pkt> out;
    uint64_t deadline = x.t.now_ns() + (x.exact() ? window : std::max(window, patient_ns));
    while (out.size() < stop_at && x.t.now_ns() < deadline) {
        uint64_t wait = deadline - x.t.now_ns();
        if (gap != 0 && !out.empty()) {
            wait = std::min(wait, gap);
        }
        auto p = x.p.expect(
            [&](const rx_pkt& k) { return tester::data_for(c)(k) && k.v().stream >= 2 && !is_retx(k); }, wait);
        if (!p) {
            if (gap != 0 && !out.empty()) {
                break;
            }
            continue;
        }
        if (out.empty() && patient_ns > window && !x.exact()) {
            deadline = std::min(deadline, x.t.now_ns() + window);
        }
        out.push_back(*p);
    }
    return out;
}

// Spec 6.1: before its first ACK a connection may send a single blind packet
// (conn_cwnd_first, default 1). Tests that need several packets out before any ACK first
// have one small WRITE acknowledged, which admits the connection to its initial window.
inline void admit(ctx& x, tconn& c, uint64_t wr_id)
{
    const region r = src_region(x, 64, 99);
    x.post_send(c, req(wr_opcode::write, 2, r, 0, 64, wr_id));
    const auto p = x.p.expect(tester::data_for(c, 2), x.p.reply_ns());
    x.check(p.has_value(), "the admitting WRITE did not go out");
    if (p) {
        x.p.send_on(c, x.p.ack_pkt(c, p->v().path, p->v().psn + 1, {}, p->v().tx_ts, 1, 0), p->v().path);
        x.check(x.wait_wc(wr_id, x.p.reply_ns()).status == wc_status::success, "the admitting WRITE failed");
    }
}

// Acknowledges everything the tester has received, path by path.
// Packets an unmarked round adds to a path window (spec 6.2): one per ai_reference_rtt
// (20 us by default) of the path's base RTT, at least one.
inline size_t additive_step(uint64_t rtt_ns)
{
    return std::max<size_t>(1, size_t((rtt_ns + 19'999) / 20'000));
}

inline void ack_all(ctx& x, tconn& c)
{
    for (uint8_t i = 0; i < c.paths; ++i) {
        const rx_path& r = c.rx[i];
        if (r.expected != c.iut_isn || r.bits.any()) {
            x.p.send_on(c, x.p.ack_pkt(c, i, r.expected, r.bits, r.last_ts, 1, 0), i);
        }
    }
}


} // namespace metaroce::conformance
