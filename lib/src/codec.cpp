#include "metaroce/wire/codec.hpp"

#include <cstring>

namespace metaroce::wire {

namespace {

template <typename H>
H load(const uint8_t* p) noexcept
{
    H h;
    std::memcpy(&h, p, sizeof(H));
    return h;
}

template <typename H>
void store(uint8_t* p, const H& h) noexcept
{
    std::memcpy(p, &h, sizeof(H));
}

bth make_bth(const bth_fields& f) noexcept
{
    bth h{};
    h.version = k_version;
    h.op = f.op;
    h.flags = be16_t::from_host(f.flags);
    h.dst_conn = be32_t::from_host(f.dst_conn);
    h.psn = be32_t::from_host(f.psn);
    h.path = f.path;
    h.plane = f.plane;
    h.tx_ts = be32_t::from_host(f.tx_ts);
    return h;
}

// Writes BTH + one fixed header; used by every non-data packet.
template <typename H>
size_t build_fixed(std::span<uint8_t> out, const bth_fields& b, const H& ext) noexcept
{
    if (out.size() < sizeof(bth) + sizeof(H)) {
        return 0;
    }
    store(out.data(), make_bth(b));
    store(out.data() + sizeof(bth), ext);
    return sizeof(bth) + sizeof(H);
}

} // namespace

std::string_view to_string(parse_error e) noexcept
{
    switch (e) {
    case parse_error::none: return "none";
    case parse_error::too_short: return "too_short";
    case parse_error::bad_version: return "bad_version";
    case parse_error::unknown_opcode: return "unknown_opcode";
    case parse_error::unknown_flags: return "unknown_flags";
    case parse_error::trailing_bytes: return "trailing_bytes";
    case parse_error::payload_overrun: return "payload_overrun";
    case parse_error::empty_payload: return "empty_payload";
    case parse_error::count_: break;
    }
    return "?";
}

parse_result parse(std::span<const uint8_t> bytes) noexcept
{
    parse_result r;
    if (bytes.size() < sizeof(bth)) {
        r.error = parse_error::too_short;
        return r;
    }
    const auto h = load<bth>(bytes.data());
    if (h.version != k_version) {
        r.error = parse_error::bad_version;
        return r;
    }
    const opcode_info& oi = info(h.op);
    if (!oi.valid) {
        r.error = parse_error::unknown_opcode;
        return r;
    }
    packet_view& v = r.pkt;
    v.op = h.op;
    v.flags = h.flags.host();
    if ((v.flags & ~bth_flag::known) != 0) {
        r.error = parse_error::unknown_flags;
        return r;
    }
    v.dst_conn = h.dst_conn.host();
    v.psn = h.psn.host();
    v.path = h.path;
    v.plane = h.plane;
    v.tx_ts = h.tx_ts.host();

    if (bytes.size() < sizeof(bth) + oi.ext_len) {
        r.error = parse_error::too_short;
        return r;
    }
    const uint8_t* p = bytes.data() + sizeof(bth);
    const size_t rest = bytes.size() - sizeof(bth) - oi.ext_len;
    if (!oi.has_payload && rest != 0) {
        r.error = parse_error::trailing_bytes;
        return r;
    }
    if (!oi.has_msg) {
        // Fixed headers are read in place (packed, byte-aligned) by their users.
        switch (h.op) {
        case opcode::ack: v.ack = reinterpret_cast<const ack_header*>(p); break;
        case opcode::nak: v.nak = reinterpret_cast<const nak_header*>(p); break;
        case opcode::connect:
        case opcode::accept: v.hello = reinterpret_cast<const hello_header*>(p); break;
        case opcode::close:
        case opcode::close_ack: v.close = reinterpret_cast<const close_header*>(p); break;
        case opcode::probe:
        case opcode::probe_ack: v.probe = reinterpret_cast<const probe_header*>(p); break;
        case opcode::cookie: v.cookie = reinterpret_cast<const cookie_header*>(p); break;
        default: break;
        }
        return r;
    }

    const auto m = load<msg_header>(p);
    p += sizeof(msg_header);
    v.stream = m.stream.host();
    v.msn = m.msn.host();
    v.ssn = m.ssn.host();
    v.recv_seq = m.recv_seq.host();
    v.msg_len = m.msg_len.host();
    v.offset = m.offset.host();
    if (oi.has_reth) {
        const auto e = load<reth>(p);
        p += sizeof(reth);
        v.va = e.va.host();
        v.rkey = e.rkey.host();
    }
    if (oi.has_imm) {
        v.imm = load<imm_header>(p).imm.host();
        p += sizeof(imm_header);
    }
    v.payload = std::span<const uint8_t>(p, rest);
    if (oi.has_payload) {
        if (uint64_t(v.offset) + rest > v.msg_len) {
            r.error = parse_error::payload_overrun;
            return r;
        }
        // Only an empty message travels as an empty packet (spec 4.3).
        if (rest == 0 && (v.msg_len != 0 || v.offset != 0 || !v.is_last())) {
            r.error = parse_error::empty_payload;
            return r;
        }
    }
    return r;
}

size_t build_data_headers(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                          size_t payload_len) noexcept
{
    const opcode_info& oi = info(b.op);
    const size_t hdr = sizeof(bth) + oi.ext_len;
    if (!oi.has_msg || out.size() < hdr + payload_len) {
        return 0;
    }
    uint8_t* p = out.data();
    store(p, make_bth(b));
    p += sizeof(bth);
    msg_header mh{};
    mh.stream = be16_t::from_host(m.stream);
    mh.msn = be32_t::from_host(m.msn);
    mh.ssn = be32_t::from_host(m.ssn);
    mh.recv_seq = be32_t::from_host(m.recv_seq);
    mh.msg_len = be32_t::from_host(m.msg_len);
    mh.offset = be32_t::from_host(m.offset);
    store(p, mh);
    p += sizeof(msg_header);
    if (oi.has_reth) {
        reth e{};
        e.va = be64_t::from_host(m.va);
        e.rkey = be32_t::from_host(m.rkey);
        store(p, e);
        p += sizeof(reth);
    }
    if (oi.has_imm) {
        imm_header i{};
        i.imm = be32_t::from_host(m.imm);
        store(p, i);
    }
    return hdr;
}

size_t build_data(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                  std::span<const uint8_t> payload) noexcept
{
    const size_t hdr = build_data_headers(out, b, m, payload.size());
    if (hdr == 0) {
        return 0;
    }
    if (!payload.empty()) {
        std::memcpy(out.data() + hdr, payload.data(), payload.size());
    }
    return hdr + payload.size();
}

size_t build_ack(std::span<uint8_t> out, const bth_fields& b, const ack_header& a) noexcept
{
    return build_fixed(out, b, a);
}
size_t build_nak(std::span<uint8_t> out, const bth_fields& b, const nak_header& n) noexcept
{
    return build_fixed(out, b, n);
}
size_t build_hello(std::span<uint8_t> out, const bth_fields& b, const hello_header& h) noexcept
{
    return build_fixed(out, b, h);
}
size_t build_close(std::span<uint8_t> out, const bth_fields& b, const close_header& c) noexcept
{
    return build_fixed(out, b, c);
}
size_t build_probe(std::span<uint8_t> out, const bth_fields& b, const probe_header& p) noexcept
{
    return build_fixed(out, b, p);
}
size_t build_cookie(std::span<uint8_t> out, const bth_fields& b, const cookie_header& c) noexcept
{
    return build_fixed(out, b, c);
}

} // namespace metaroce::wire
