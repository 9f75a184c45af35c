// Fuzzes wire::parse on arbitrary bytes. What the codec promises and is checked here:
// - parse never reads outside its input (ASan) and any error is a known reason;
// - an accepted packet has version 1, a known opcode and only known flags; its
//   payload and fixed-header pointers lie inside the input; a packet type without
//   payload is exactly BTH + its fixed headers long; payload fits the message;
// - rebuilding an accepted packet with the builders gives back the input bytes, except
//   the reserved fields (zero on send, ignored on receive), and parses to the same view;
// - builders refuse (return 0) an output buffer one byte too small.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "metaroce/wire/codec.hpp"

using namespace metaroce::wire;

namespace {

[[noreturn]] void fail(const char* what)
{
    std::fprintf(stderr, "\n*** fuzz_codec invariant violated: %s\n", what);
    std::abort();
}

void require(bool ok, const char* what)
{
    if (!ok) {
        fail(what);
    }
}

bool inside(const void* p, size_t n, const uint8_t* data, size_t size)
{
    const auto* b = static_cast<const uint8_t*>(p);
    return b >= data && n <= size && b - data <= ptrdiff_t(size - n);
}

bool same_view(const packet_view& a, const packet_view& b)
{
    return a.op == b.op && a.flags == b.flags && a.dst_conn == b.dst_conn && a.psn == b.psn &&
           a.path == b.path && a.plane == b.plane && a.tx_ts == b.tx_ts && a.stream == b.stream &&
           a.msn == b.msn && a.ssn == b.ssn && a.recv_seq == b.recv_seq && a.msg_len == b.msg_len &&
           a.offset == b.offset && a.va == b.va && a.rkey == b.rkey && a.imm == b.imm &&
           a.read_hint_mbps == b.read_hint_mbps &&
           a.payload.size() == b.payload.size() &&
           (a.payload.empty() || std::memcmp(a.payload.data(), b.payload.data(), a.payload.size()) == 0);
}

// The input with the reserved fields as a builder writes them (zero).
std::vector<uint8_t> canonical(const uint8_t* data, size_t size, const opcode_info& oi)
{
    std::vector<uint8_t> c(data, data + size);
    const auto zero = [&](size_t off, size_t n) { std::memset(c.data() + off, 0, n); };
    zero(offsetof(bth, reserved), sizeof(bth::reserved));
    if (oi.has_msg) {
        zero(sizeof(bth) + offsetof(msg_header, reserved), sizeof(msg_header::reserved));
        if (oi.has_reth && data[offsetof(bth, op)] != uint8_t(opcode::read_req)) {
            // Only a READ_REQ carries a rate hint there (spec 3.3).
            zero(sizeof(bth) + sizeof(msg_header) + offsetof(reth, rate_hint_mbps), sizeof(reth::rate_hint_mbps));
        }
    }
    return c;
}

template <typename H>
H load(const H* p)
{
    H h;
    std::memcpy(&h, p, sizeof h);
    return h;
}

// Rebuilds an accepted packet with the builder of its type into out.
size_t rebuild(const packet_view& p, std::span<uint8_t> out)
{
    const bth_fields b{p.op, p.flags, p.dst_conn, p.psn, p.path, p.plane, p.tx_ts};
    const opcode_info& oi = info(p.op);
    if (oi.has_msg) {
        const msg_fields m{p.stream, p.msn, p.ssn, p.recv_seq, p.msg_len, p.offset, p.va, p.rkey, p.imm, p.read_hint_mbps};
        return build_data(out, b, m, p.payload);
    }
    switch (p.op) {
    case opcode::ack: return p.ack ? build_ack(out, b, load(p.ack)) : 0;
    case opcode::nak: return p.nak ? build_nak(out, b, load(p.nak)) : 0;
    case opcode::connect:
    case opcode::accept: return p.hello ? build_hello(out, b, load(p.hello)) : 0;
    case opcode::close:
    case opcode::close_ack: return p.close ? build_close(out, b, load(p.close)) : 0;
    case opcode::probe:
    case opcode::probe_ack: return p.probe ? build_probe(out, b, load(p.probe)) : 0;
    case opcode::cookie: return p.cookie ? build_cookie(out, b, load(p.cookie)) : 0;
    default: fail("an accepted opcode without a builder here: extend rebuild()");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const parse_result r = parse({data, size});
    require(r.error < parse_error::count_, "error out of range");
    require(to_string(r.error) != "?", "error without a name");
    if (!r.ok()) {
        require(size >= sizeof(bth) || r.error == parse_error::too_short,
                "input shorter than a BTH not reported as too_short");
        return 0;
    }
    const packet_view& p = r.pkt;
    const opcode_info& oi = info(p.op);
    require(size >= sizeof(bth) + oi.ext_len, "accepted a packet shorter than its headers");
    require(data[0] == k_version, "accepted another version");
    require(oi.valid, "accepted an unknown opcode");
    require((p.flags & ~bth_flag::known) == 0, "accepted unknown flags");
    if (!oi.has_payload) {
        require(size == sizeof(bth) + oi.ext_len, "a packet type without payload has trailing bytes");
        require(p.payload.empty(), "payload on a packet type without payload");
    } else {
        require(p.payload.size() == size - sizeof(bth) - oi.ext_len, "payload is not the rest of the packet");
        require(uint64_t(p.offset) + p.payload.size() <= p.msg_len, "payload beyond the message");
        require(!p.payload.empty() || (p.msg_len == 0 && p.offset == 0 && p.is_last()),
                "an empty payload that is not a whole empty message");
    }
    if (!p.payload.empty()) {
        require(inside(p.payload.data(), p.payload.size(), data, size), "payload outside the input");
    }
    const void* fixed[] = {p.ack, p.nak, p.hello, p.close, p.probe, p.cookie};
    const size_t fixed_len[] = {sizeof(ack_header), sizeof(nak_header), sizeof(hello_header),
                                sizeof(close_header), sizeof(probe_header), sizeof(cookie_header)};
    int set = 0;
    for (size_t i = 0; i < std::size(fixed); ++i) {
        if (fixed[i] != nullptr) {
            ++set;
            require(!oi.has_msg, "a fixed header pointer on a data packet");
            require(fixed_len[i] == oi.ext_len, "a fixed header of another type's size");
            require(inside(fixed[i], fixed_len[i], data, size), "a fixed header outside the input");
        }
    }
    require(set == (oi.has_msg ? 0 : 1), "a control packet without exactly one fixed header");

    std::vector<uint8_t> out(size);
    const size_t n = rebuild(p, out);
    require(n == size, "rebuilt packet has another length");
    require(out == canonical(data, size, oi), "rebuilt packet differs from the input");
    const parse_result again = parse(out);
    require(again.ok() && same_view(p, again.pkt), "rebuilt packet parses differently");
    std::vector<uint8_t> small(size - 1);
    require(rebuild(p, small) == 0, "a builder wrote into a buffer too small");
    return 0;
}
