// Zero-copy sends (io_types.hpp tx_frame::payload): a driver that asks for it gets the
// headers in its buffer and the payload as pieces of the registered source; joined,
// they are byte for byte the packet copy mode builds, retransmissions included.
#include <catch2/catch.hpp>

#include <vector>

#include "test_util.hpp"

using namespace metaroce;
using namespace metaroce::test;

namespace {

struct run_result {
    std::vector<captured> sent;
    std::vector<uint8_t> landed;
    std::vector<completion> cq;
};

enum class op_kind { write_one, write_list, write_long_list, read };

// The same transfer (same seeds, addresses and drops) in copy or zero-copy mode.
run_result run(bool zero_copy, op_kind kind)
{
    pair_harness h(small_mtu());
    h.zero_copy = zero_copy;
    const conn_id c = h.connect();
    buffer src(h.a(), 20000, k_all_access, 5, 0x100000), dst(h.b(), 20000, k_all_access, 0, 0x200000);
    buffer remote(h.b(), 20000, k_all_access, 9, 0x300000), local(h.a(), 20000, k_all_access, 0, 0x400000);
    int seen = 0;
    int dropped = 0;
    h.filter = [&](captured& p) {
        const bool drop = is_data(p) && seen++ % 3 == 1 && dropped < 5;
        dropped += drop ? 1 : 0;
        return drop;
    };
    std::vector<sge> list;
    // write_list: 5 pieces of 3000 bytes (at most 2 per packet); write_long_list: 16 of
    // 100, 10 or 11 in each 1024-byte packet, more than k_max_payload_refs (copied).
    const bool long_list = kind == op_kind::write_long_list;
    const uint64_t piece = long_list ? 100 : 3000;
    for (size_t i = 0; i < (long_list ? 16 : 5); ++i) {
        list.push_back({src.va(i * (piece + 17) + 3), uint32_t(piece), src.mr.lkey});
    }
    send_wr w;
    w.wr_id = 1;
    if (kind == op_kind::read) {
        w.op = wr_opcode::read;
        w.local = {local.va(0), 15000, local.mr.lkey};
        w.remote_va = remote.va(100);
        w.rkey = remote.mr.rkey;
    } else {
        w.op = wr_opcode::write;
        if (kind == op_kind::write_one) {
            w.local = {src.va(7), 15000, src.mr.lkey};
        } else {
            w.sg_list = list.data();
            w.num_sge = uint32_t(list.size());
        }
        w.remote_va = dst.va(50);
        w.rkey = dst.mr.rkey;
    }
    REQUIRE(h.a().post_send(c, w, h.now()) == post_result::ok);
    REQUIRE(h.run_until([&] { return !h.cq[0].empty(); }));
    REQUIRE(dropped >= 1);
    run_result r;
    r.sent = h.sent;
    r.landed = kind == op_kind::read ? local.bytes : dst.bytes;
    r.cq = h.cq[0];
    // Refs point into the registered source, never into a copy.
    const buffer& from = kind == op_kind::read ? remote : src;
    for (const captured& p : h.sent) {
        for (size_t i = 0; i < p.frame.payload_refs; ++i) {
            const uint8_t* at = p.frame.payload[i].host;
            REQUIRE(at >= from.bytes.data());
            REQUIRE(at + p.frame.payload[i].len <= from.bytes.data() + from.bytes.size());
        }
    }
    return r;
}

size_t by_ref(const run_result& r)
{
    size_t n = 0;
    for (const captured& p : r.sent) {
        n += p.frame.payload_refs != 0 ? 1 : 0;
    }
    return n;
}

void same_packets(const run_result& copy, const run_result& zc)
{
    REQUIRE(copy.sent.size() == zc.sent.size());
    for (size_t i = 0; i < copy.sent.size(); ++i) {
        INFO("packet " << i);
        REQUIRE(copy.sent[i].frame.payload_refs == 0);
        REQUIRE(first_mismatch(copy.sent[i].bytes, zc.sent[i].bytes).empty());
        REQUIRE(zc.sent[i].frame.len + zc.sent[i].frame.payload_len == zc.sent[i].bytes.size());
    }
    REQUIRE(copy.landed == zc.landed);
    REQUIRE(zc.cq.size() == 1);
    REQUIRE(zc.cq[0].status == wc_status::success);
}

} // namespace

TEST_CASE("zero copy: a WRITE with retransmissions is byte for byte the copy-mode one", "[zero_copy]")
{
    const run_result copy = run(false, op_kind::write_one);
    const run_result zc = run(true, op_kind::write_one);
    same_packets(copy, zc);
    REQUIRE(by_ref(zc) >= 15 + 5); // every data packet, the 5 retransmissions too
    for (const captured& p : zc.sent) {
        if (p.frame.payload_refs != 0) {
            REQUIRE(p.frame.payload_refs == 1);
            REQUIRE(p.frame.len < 100); // headers only in the driver's buffer
        }
    }
}

TEST_CASE("zero copy: a gathered WRITE is described piece by piece", "[zero_copy][sge]")
{
    const run_result copy = run(false, op_kind::write_list);
    const run_result zc = run(true, op_kind::write_list);
    same_packets(copy, zc);
    size_t split = 0;
    for (const captured& p : zc.sent) {
        split += p.frame.payload_refs == 2 ? 1 : 0;
    }
    REQUIRE(split >= 2); // packets straddling two pieces of the list
}

TEST_CASE("zero copy: more pieces than a frame describes fall back to a copy", "[zero_copy][sge]")
{
    const run_result copy = run(false, op_kind::write_long_list);
    const run_result zc = run(true, op_kind::write_long_list);
    same_packets(copy, zc);
    size_t copied = 0;
    for (const captured& p : zc.sent) {
        const auto v = p.view();
        if (wire::info(v.op).reliable && p.frame.payload_refs == 0 && p.bytes.size() > 900) {
            ++copied; // an 8-piece packet: copied whole into the buffer
        }
    }
    REQUIRE(copied >= 1);
}

TEST_CASE("zero copy: READ responses refer to the responder's region", "[zero_copy]")
{
    const run_result copy = run(false, op_kind::read);
    const run_result zc = run(true, op_kind::read);
    same_packets(copy, zc);
    REQUIRE(by_ref(zc) >= 15);
}
