// Fuzzes two real endpoints with an established connection, guarded memory and work
// outstanding (fuzz_world.hpp). The input is a sequence of operations
// (endpoint_ops.hpp): forged and mutated packets from the peer's address, time,
// delivery, loss, duplication and reordering of real packets, posting, deregistering,
// closing. After every operation no byte outside what the peer may write may have
// changed; completions must match posted work; timers must make progress.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "endpoint_ops.hpp"
#include "fuzz_world.hpp"
#include "packet_edit.hpp"

using namespace metaroce;
using namespace metaroce::fuzz;

namespace {

constexpr int k_max_ops = 64;

// FUZZ_TRACE=1 prints each operation: what a reproducer does, for write-ups.
const bool k_trace = std::getenv("FUZZ_TRACE") != nullptr;

const char* kind_name(op_kind k)
{
    static constexpr const char* k_names[] = {"raw", "mutate", "advance", "deliver", "run", "post_send",
                                              "post_recv", "deregister", "close", "plane", "poll_cq", "connect"};
    static_assert(std::size(k_names) == size_t(op_kind::count_));
    return k < op_kind::count_ ? k_names[size_t(k)] : "?";
}

conn_id pick_conn(world& w, int s, uint8_t i)
{
    const auto ids = w.conns(s);
    return ids.empty() ? k_no_conn : ids[i % ids.size()];
}

void do_post_send(world& w, int s, int flags, op_reader& in)
{
    static constexpr wr_opcode k_ops[] = {wr_opcode::write, wr_opcode::write_imm, wr_opcode::send,
                                          wr_opcode::send_imm, wr_opcode::read};
    const conn_id c = pick_conn(w, s, in.u8());
    send_wr wr;
    wr.wr_id = w.next_wr_id();
    wr.op = k_ops[in.u8() % 5];
    wr.stream = uint16_t(in.u8() % 4);
    const memory_region& local = w.mem(s).region(in.u8() % k_regions);
    const uint16_t off = in.u16(), len = in.u16();
    wr.local = {local.va + off % (local.length + 32), uint32_t(len % 1100), local.lkey};
    const memory_region& remote = w.mem(1 - s).region(in.u8() % k_regions);
    wr.remote_va = remote.va + in.u16() % (remote.length + 96) - 32;
    wr.rkey = remote.rkey;
    wr.imm = in.u32();
    wr.signaled = (flags & 1) == 0;
    const post_result r = w.post_send(s, c, wr);
    if (k_trace) {
        std::fprintf(stderr, "  wr_id %llu op %d stream %u len %u on conn 0x%x: %s\n", (unsigned long long)wr.wr_id,
                     int(wr.op), wr.stream, wr.local.length, c, std::string(to_string(r)).c_str());
    }
}

void do_post_recv(world& w, int s, op_reader& in)
{
    const conn_id c = pick_conn(w, s, in.u8());
    const uint16_t stream = uint16_t(in.u8() % 4);
    const int buf = in.u8();
    const uint8_t l = in.u8();
    recv_wr wr;
    wr.wr_id = w.next_wr_id();
    const uint32_t full = w.mem(s).recv_len();
    wr.local = {w.mem(s).recv_va(buf), (l & 1) ? full : uint32_t(l >> 1) % (full + 1),
                w.mem(s).region(r_recv).lkey};
    const post_result r = w.post_recv(s, c, stream, wr);
    if (k_trace) {
        std::fprintf(stderr, "  recv wr_id %llu stream %u len %u on conn 0x%x: %s\n", (unsigned long long)wr.wr_id,
                     stream, wr.local.length, c, std::string(to_string(r)).c_str());
    }
}

void do_mutate(world& w, int to, op_reader& in)
{
    const auto& pool = w.sent[to];
    const uint16_t pick = in.u16();
    const int edits = in.u8() % 4 + 1;
    if (pool.empty()) {
        return;
    }
    const wire_pkt& t = pool[pick % pool.size()];
    std::vector<uint8_t> bytes = t.bytes;
    rx_meta meta = t.meta;
    for (int i = 0; i < edits; ++i) {
        const auto f = field(in.u8() % uint8_t(field::count_));
        const uint32_t v = in.u32();
        edit_packet(w, to, bytes, meta, f, v);
        if (k_trace) {
            std::fprintf(stderr, "  edit field %d value 0x%x\n", int(f), v);
        }
    }
    if (k_trace) {
        std::fprintf(stderr, "  packet %zu of %zu to side %d:", pick % pool.size(), pool.size(), to);
        for (uint8_t x : bytes) {
            std::fprintf(stderr, " %02x", x);
        }
        std::fprintf(stderr, "\n");
    }
    w.inject(to, meta, bytes);
    w.pump();
}

void apply(world& w, op_reader& in)
{
    const uint8_t b = in.u8();
    const auto kind = op_kind((b & 0xf) % uint8_t(op_kind::count_));
    const int s = (b >> 4) & 1;
    const int flags = b >> 5;
    if (k_trace) {
        std::fprintf(stderr, "t=%llu op %s side %d flags %d (wire %zu, conns %zu/%zu)\n",
                     (unsigned long long)w.now(), kind_name(kind), s, flags, w.wire_size(), w.conns(0).size(),
                     w.conns(1).size());
    }
    switch (kind) {
    case op_kind::raw: {
        const auto bytes = in.bytes(in.u16() % 1200);
        rx_meta m;
        m.src_addr = k_addr[1 - s];
        m.plane = uint8_t(flags & 1);
        m.ce = (flags & 2) != 0;
        m.udp_sport = 49152;
        w.inject(s, m, bytes);
        w.pump();
        break;
    }
    case op_kind::mutate: do_mutate(w, s, in); break;
    case op_kind::advance: {
        const uint8_t m = in.u8();
        w.advance(decode_time(m, in.u8()));
        break;
    }
    case op_kind::deliver: w.deliver(in.u8() % 32 + 1, flags & 3); break;
    case op_kind::run: {
        const uint8_t m = in.u8();
        w.run(decode_time(m, in.u8()));
        break;
    }
    case op_kind::post_send: do_post_send(w, s, flags, in); break;
    case op_kind::post_recv: do_post_recv(w, s, in); break;
    case op_kind::deregister: w.deregister(s, in.u8() % k_regions); break;
    case op_kind::close: {
        const conn_id c = pick_conn(w, s, in.u8());
        if (c != k_no_conn) {
            w.close(s, c);
        }
        break;
    }
    case op_kind::plane: w.set_plane(s, uint8_t(in.u8() % 3), (flags & 1) != 0); break;
    case op_kind::poll_cq: {
        const uint8_t m = in.u8();
        w.poll_cq(s, m == 0 ? SIZE_MAX : m);
        break;
    }
    case op_kind::connect: w.connect(s); break;
    case op_kind::count_: break;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    world w;
    op_reader in({data, size});
    for (int n = 0; n < k_max_ops && !in.empty(); ++n) {
        apply(w, in);
        w.check_memory("after an operation");
    }
    // Whatever the input did, the two real endpoints go on working for a while: late
    // effects (a write landing after deregistration, a timer that never settles) show here.
    w.run(5'000'000);
    w.check_flushed();
    w.check_memory("at the end");
    return 0;
}
