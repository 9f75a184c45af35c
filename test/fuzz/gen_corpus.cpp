// Writes the seed corpora of the fuzz targets from captured real transfers:
//   gen_corpus OUTDIR  ->  OUTDIR/fuzz_codec/, OUTDIR/fuzz_frame/, OUTDIR/fuzz_endpoint/
// It runs the fuzz world (handshake, every message type both ways, outstanding work),
// then RNR, loss with timeouts and probes, a plane going down, a fatal NAK, close and
// a new connection, and keeps every distinct packet: as is for fuzz_codec, inside
// Ethernet/IPv4/UDP (write_headers, each checksum mode) for fuzz_frame, and as
// operation sequences on the same world for fuzz_endpoint.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "dpdk/encap.hpp"
#include "endpoint_ops.hpp"
#include "fuzz_world.hpp"
#include "metaroce/wire/codec.hpp"

using namespace metaroce;
using namespace metaroce::fuzz;
namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_packets = 150;

void write_file(const fs::path& p, const std::vector<uint8_t>& bytes)
{
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!f) {
        fail("cannot write %s", p.c_str());
    }
}

std::string op_name(const std::vector<uint8_t>& b)
{
    const auto r = wire::parse(b);
    std::string n(r.ok() ? wire::info(r.pkt.op).name : "malformed");
    for (char& c : n) {
        c = char(std::tolower(static_cast<unsigned char>(c)));
    }
    return n;
}

std::string numbered(size_t i, const std::string& what)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "%03zu-", i);
    return buf + what;
}

// Every distinct packet of a scenario run through the fuzz world.
std::vector<wire_pkt> capture()
{
    std::vector<wire_pkt> out;
    std::set<std::vector<uint8_t>> seen;
    world w;
    // The world's setup ran before the hook could be set: take what it recorded.
    for (int to = 0; to < 2; ++to) {
        for (const wire_pkt& p : w.sent[to]) {
            if (seen.insert(p.bytes).second) {
                out.push_back(p);
            }
        }
    }
    w.on_send = [&](const wire_pkt& p) {
        if (out.size() < k_max_packets && seen.insert(p.bytes).second) {
            out.push_back(p);
        }
    };
    w.run(2'000'000); // the outstanding transfer completes
    w.poll_cq(0);
    w.poll_cq(1);
    const conn_id c = w.conn(0);
    const memory_region& src = w.mem(0).region(r_private);
    send_wr wr;
    wr.local = {src.va, 100, src.lkey};
    // RNR: a SEND before its receive is posted, then the receive.
    wr.wr_id = w.next_wr_id();
    wr.op = wr_opcode::send;
    wr.stream = 2;
    w.post_send(0, c, wr);
    w.run(20'000);
    recv_wr rv;
    rv.wr_id = w.next_wr_id();
    rv.local = {w.mem(1).recv_va(7), w.mem(1).recv_len(), w.mem(1).region(r_recv).lkey};
    w.post_recv(1, w.conn(1), 2, rv);
    w.run(500'000);
    // Loss: a WRITE whose packets are all dropped, so paths time out, fail and probe.
    wr.wr_id = w.next_wr_id();
    wr.op = wr_opcode::write;
    wr.stream = 0;
    wr.remote_va = w.mem(1).region(r_rw).va;
    wr.rkey = w.mem(1).region(r_rw).rkey;
    wr.local.length = 700;
    w.post_send(0, c, wr);
    w.pump();
    w.deliver(w.wire_size(), 1);
    w.advance(600'000);
    w.run(3'000'000);
    // A plane taken down and up again.
    w.set_plane(0, 1, false);
    wr.wr_id = w.next_wr_id();
    w.post_send(0, c, wr);
    w.run(500'000);
    w.set_plane(0, 1, true);
    w.run(500'000);
    w.poll_cq(0);
    w.poll_cq(1);
    // A WRITE to a region without remote_write: NAK, both sides in ERROR, then close.
    wr.wr_id = w.next_wr_id();
    wr.remote_va = w.mem(1).region(r_ro).va;
    wr.rkey = w.mem(1).region(r_ro).rkey;
    w.post_send(0, c, wr);
    w.run(500'000);
    w.close(0, c);
    w.close(1, w.conn(1));
    w.run(2'000'000);
    // A new connection, closed cleanly.
    const conn_id c2 = w.connect(0);
    w.run(2'000'000);
    w.close(0, c2);
    w.run(2'000'000);
    return out;
}

void codec_and_frames(const std::vector<wire_pkt>& pkts, const fs::path& codec, const fs::path& frame)
{
    for (size_t i = 0; i < pkts.size(); ++i) {
        const wire_pkt& p = pkts[i];
        write_file(codec / numbered(i, op_name(p.bytes)), p.bytes);
        // fuzz_frame input: one byte of hw checksum state, then the frame.
        const int mode = int(i % 4);
        dpdk::tx_csum_mode csum;
        csum.ip_offload = mode == 1;
        csum.udp_offload = mode == 2;
        csum.udp_software = mode != 2;
        dpdk::tx_addressing a;
        a.src_mac = {{0x02, 0, 0, 0, 0, uint8_t(p.meta.src_addr)}};
        a.dst_mac = {{0x02, 0, 0, 0, 0, uint8_t(k_addr[p.to])}};
        a.src_ip = p.meta.src_addr;
        a.dst_ip = k_addr[p.to];
        a.udp_sport = p.meta.udp_sport;
        a.udp_dport = wire::k_udp_dst_port;
        a.ect = i % 3 != 0;
        std::vector<uint8_t> f(1 + dpdk::k_frame_overhead + p.bytes.size());
        std::copy(p.bytes.begin(), p.bytes.end(), f.begin() + 1 + ptrdiff_t(dpdk::k_frame_overhead));
        dpdk::write_headers(f.data() + 1, a, p.bytes.size(), csum);
        f[0] = uint8_t((csum.ip_offload ? 1 : 0) | (csum.udp_offload ? 2 : 0));
        write_file(frame / numbered(i, op_name(p.bytes)), f);
    }
}

// fuzz_endpoint seeds: each packet the world sends, delivered once unchanged through the
// mutate operation (so the fuzzer edits real packets), and a few whole scenarios.
void endpoint_seeds(const fs::path& dir)
{
    world w;
    size_t n = 0;
    for (int to = 0; to < 2; ++to) {
        for (size_t i = 0; i < w.sent[to].size(); ++i) {
            op_writer o;
            o.op(op_kind::mutate, to).u16(uint32_t(i)).u8(0).edit(field::none, 0);
            o.op(op_kind::run).u8(0).u8(20);
            write_file(dir / numbered(n++, "to" + std::to_string(to) + "-" + op_name(w.sent[to][i].bytes)), o.out);
        }
    }
    const auto seed = [&](const char* name, const op_writer& o) { write_file(dir / numbered(n++, name), o.out); };
    seed("run", op_writer().op(op_kind::run).u8(255).u8(14).op(op_kind::poll_cq, 0).u8(0).op(op_kind::poll_cq, 1).u8(0));
    seed("deliver-twice", op_writer().op(op_kind::deliver, 0, 2).u8(31).op(op_kind::run).u8(0).u8(20));
    seed("deliver-reversed", op_writer().op(op_kind::deliver, 0, 3).u8(7).op(op_kind::run).u8(0).u8(20));
    seed("drop-and-time-out", op_writer().op(op_kind::deliver, 0, 1).u8(31).op(op_kind::advance).u8(200).u8(12));
    seed("deregister-mid-write", op_writer().op(op_kind::deliver).u8(2).op(op_kind::deregister, 1).u8(r_rw)
                                     .op(op_kind::run).u8(0).u8(20));
    seed("close", op_writer().op(op_kind::close, 0).u8(0).op(op_kind::run).u8(0).u8(20));
    seed("close-then-timers", op_writer().op(op_kind::close, 1).u8(0).op(op_kind::advance).u8(255).u8(16));
    seed("plane-down", op_writer().op(op_kind::plane, 0, 0).u8(1).op(op_kind::run).u8(0).u8(21));
    seed("connect", op_writer().op(op_kind::connect, 1).op(op_kind::run).u8(0).u8(20));
    seed("post-read", op_writer().op(op_kind::post_send, 0).u8(0).u8(4).u8(1).u8(r_private).u16(1000).u16(300)
                          .u8(r_rw).u16(32).u32(0).op(op_kind::run).u8(0).u8(20));
    seed("post-recv-send", op_writer().op(op_kind::post_recv, 1).u8(0).u8(2).u8(7).u8(1)
                               .op(op_kind::post_send, 0).u8(0).u8(3).u8(2).u8(r_private).u16(0).u16(100)
                               .u8(0).u16(0).u32(7).op(op_kind::run).u8(0).u8(20));
    seed("raw-garbage", op_writer().op(op_kind::raw, 1).u16(24).bytes(std::vector<uint8_t>(24, 1)));
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    const fs::path out = argv[1];
    const fs::path codec = out / "fuzz_codec", frame = out / "fuzz_frame", ep = out / "fuzz_endpoint";
    for (const fs::path& d : {codec, frame, ep}) {
        fs::remove_all(d);
        fs::create_directories(d);
    }
    const std::vector<wire_pkt> pkts = capture();
    codec_and_frames(pkts, codec, frame);
    endpoint_seeds(ep);
    std::printf("gen_corpus: %zu packets captured into %s\n", pkts.size(), out.c_str());
    return 0;
}
