// Small helpers shared by the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>

#include "pair_harness.hpp"

namespace metaroce::test {

// Empty when equal, else where and how the two ranges first differ; keeps a failed
// comparison of megabytes to one line.
inline std::string first_mismatch(std::span<const uint8_t> want, std::span<const uint8_t> got)
{
    if (want.size() != got.size()) {
        std::ostringstream o;
        o << "size " << got.size() << " != expected " << want.size();
        return o.str();
    }
    for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] != got[i]) {
            std::ostringstream o;
            o << "first mismatch at offset " << i << ": got " << int(got[i]) << " expected "
              << int(want[i]);
            return o.str();
        }
    }
    return {};
}

inline bool all_zero(std::span<const uint8_t> b)
{
    for (uint8_t v : b) {
        if (v != 0) {
            return false;
        }
    }
    return true;
}

inline send_wr make_wr(wr_opcode op, const buffer& src, const buffer& dst, uint64_t id,
                       uint16_t stream = 0)
{
    send_wr wr;
    wr.wr_id = id;
    wr.op = op;
    wr.stream = stream;
    wr.local = {src.va(), uint32_t(src.bytes.size()), src.mr.lkey};
    wr.remote_va = dst.va();
    wr.rkey = dst.mr.rkey;
    wr.imm = uint32_t(id * 3 + 1);
    return wr;
}

inline recv_wr make_recv(const buffer& dst, uint64_t id)
{
    recv_wr r;
    r.wr_id = id;
    r.local = {dst.va(), uint32_t(dst.bytes.size()), dst.mr.lkey};
    return r;
}

inline bool is_data(const captured& c) { return wire::info(c.view().op).reliable; }
inline bool is_op(const captured& c, wire::opcode op) { return c.view().op == op; }

struct xorshift {
    uint64_t x;
    uint64_t next()
    {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    }
};

} // namespace metaroce::test
