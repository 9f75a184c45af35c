// The byte format fuzz_endpoint decodes: a sequence of operations on the world.
// Each starts with one byte: low 4 bits the kind, bit 4 the side it acts on (or is
// sent to), bits 5-7 flags; arguments follow, integers little-endian. Missing bytes
// read as zero, so every input decodes. gen_corpus writes seeds with op_writer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace metaroce::fuzz {

enum class op_kind : uint8_t {
    raw,        // u16 len, bytes: arbitrary packet from the peer's address (flags: plane, CE)
    mutate,     // u16 template, u8 edits, edits x (u8 field, u32 value): a real packet, edited
    advance,    // u8 mantissa, u8 exponent: time passes, timers fire, nothing is delivered
    deliver,    // u8 count: the oldest wire packets arrive now (flags: drop, twice, reversed)
    run,        // u8 mantissa, u8 exponent: time passes on a working fabric
    post_send,  // u8 conn, u8 opcode, u8 stream, u8 local region, u16 off, u16 len,
                // u8 remote region, u16 remote off, u32 imm (flag 1: unsignaled)
    post_recv,  // u8 conn, u8 stream, u8 buffer, u8 length
    deregister, // u8 region
    close,      // u8 conn
    plane,      // u8 plane (flag 1: up)
    poll_cq,    // u8 max
    connect,    // a new connection to the other side
    count_,
};

// Fields a mutate edit may change; the value's meaning depends on the field.
enum class field : uint8_t {
    none,
    psn_rel,   // PSN near what the receiver expects (data) or has outstanding (ACK/NAK)
    psn,
    path,
    flags,
    msn,       // the rest of the msg_header fields are shifted by a small signed delta...
    ssn,
    recv_seq,
    msg_len,   // ...or set
    offset,
    stream,
    va,        // near a region of the receiving side
    rkey,      // a (possibly deregistered) region key of the receiving side, or raw
    payload,   // new payload length and fill byte
    retype,    // another data opcode, same fields
    imm,
    tx_ts,
    ext,       // one byte of the fixed header after the BTH
    ack,       // ACK fields: SACK byte, counters, rate hint, echoed time
    dst_conn,  // a live connection id of the receiver, or raw
    meta,      // arrival: CE, plane, a wrong source address, UDP source port
    count_,
};

inline uint64_t decode_time(uint8_t mantissa, uint8_t exponent)
{
    const uint64_t ns = (uint64_t(mantissa) + 1) << (exponent % 24);
    return ns < 100'000'000 ? ns : 100'000'000;
}

struct op_writer {
    std::vector<uint8_t> out;
    op_writer& op(op_kind k, int side = 0, int flags = 0)
    {
        out.push_back(uint8_t(uint8_t(k) | (side & 1) << 4 | (flags & 7) << 5));
        return *this;
    }
    op_writer& u8(uint32_t v)
    {
        out.push_back(uint8_t(v));
        return *this;
    }
    op_writer& u16(uint32_t v) { return u8(v).u8(v >> 8); }
    op_writer& u32(uint32_t v) { return u16(v).u16(v >> 16); }
    op_writer& bytes(std::span<const uint8_t> b)
    {
        out.insert(out.end(), b.begin(), b.end());
        return *this;
    }
    op_writer& edit(field f, uint32_t v) { return u8(uint8_t(f)).u32(v); }
};

class op_reader {
public:
    explicit op_reader(std::span<const uint8_t> d) : d_(d) {}
    bool empty() const { return pos_ >= d_.size(); }
    uint8_t u8() { return pos_ < d_.size() ? d_[pos_++] : 0; }
    uint16_t u16()
    {
        const uint16_t lo = u8();
        return uint16_t(lo | uint16_t(u8()) << 8);
    }
    uint32_t u32()
    {
        const uint32_t lo = u16();
        return lo | uint32_t(u16()) << 16;
    }
    std::span<const uint8_t> bytes(size_t n)
    {
        n = std::min(n, d_.size() - std::min(pos_, d_.size()));
        const auto s = d_.subspan(pos_, n);
        pos_ += n;
        return s;
    }

private:
    std::span<const uint8_t> d_;
    size_t pos_ = 0;
};

} // namespace metaroce::fuzz
