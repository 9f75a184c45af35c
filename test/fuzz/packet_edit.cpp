// Field edits for fuzz_endpoint's mutate operation (see packet_edit.hpp). Headers are
// read and written through the public packed wire structs, so the edits follow
// whatever layout headers.hpp declares.
#include "packet_edit.hpp"

#include <cstring>

#include "metaroce/wire/codec.hpp"

namespace metaroce::fuzz {

namespace {

using namespace wire;

template <typename H>
bool get(const std::vector<uint8_t>& b, size_t off, H& h)
{
    if (b.size() < off + sizeof(H)) {
        return false;
    }
    std::memcpy(&h, b.data() + off, sizeof(H));
    return true;
}

template <typename H>
void put(std::vector<uint8_t>& b, size_t off, const H& h)
{
    if (b.size() >= off + sizeof(H)) {
        std::memcpy(b.data() + off, &h, sizeof(H));
    }
}

// Edits one field of header H at `off` through f, if the packet is long enough.
template <typename H, typename F>
void with(std::vector<uint8_t>& b, size_t off, F&& f)
{
    H h;
    if (get(b, off, h)) {
        f(h);
        put(b, off, h);
    }
}

int8_t small(uint32_t v) { return int8_t(v >> 8); }

// Where the receiver stands on the packet's path: data PSNs near its cumulative
// point, ACK/NAK PSNs near its oldest unacknowledged or next PSN.
uint32_t psn_base(world& w, int to, const bth& h, uint32_t v)
{
    conn_id c = h.dst_conn.host();
    auto ci = w.ep(to).inspect(c);
    if (!ci) {
        c = w.conn(to);
        ci = w.ep(to).inspect(c);
    }
    if (!ci || ci->path.empty()) {
        return 0;
    }
    const path_info& p = ci->path[h.path % ci->path.size()];
    if (info(h.op).reliable) {
        return p.rx_expected;
    }
    return (v & 1) ? p.next_psn : p.una;
}

void retype(std::vector<uint8_t>& b, uint32_t v)
{
    static constexpr opcode k_data[] = {opcode::write, opcode::write_imm, opcode::send,
                                        opcode::send_imm, opcode::read_req, opcode::read_resp};
    const parse_result pr = parse(b);
    if (!pr.ok() || !info(pr.pkt.op).has_msg) {
        return;
    }
    const packet_view& p = pr.pkt;
    bth_fields bf{k_data[v % 6], p.flags, p.dst_conn, p.psn, p.path, p.plane, p.tx_ts};
    msg_fields mf{p.stream, p.msn, p.ssn, p.recv_seq, p.msg_len, p.offset, p.va, p.rkey, p.imm, p.read_hint_mbps};
    const std::vector<uint8_t> payload(p.payload.begin(), p.payload.end());
    std::vector<uint8_t> out(data_header_len(bf.op) + payload.size());
    const size_t n = info(bf.op).has_payload ? build_data(out, bf, mf, payload)
                                             : build_data_headers(out, bf, mf, 0);
    if (n > 0) {
        out.resize(n);
        b = std::move(out);
    }
}

} // namespace

void edit_packet(world& w, int to, std::vector<uint8_t>& b, rx_meta& meta, field f, uint32_t v)
{
    bth h;
    if (!get(b, 0, h)) {
        return;
    }
    const opcode_info& oi = info(h.op);
    const size_t msg_off = sizeof(bth);
    const size_t reth_off = msg_off + sizeof(msg_header);
    const size_t imm_off = reth_off + (oi.has_reth ? sizeof(reth) : 0);
    switch (f) {
    case field::none:
    case field::count_: break;
    case field::psn_rel: h.psn = be32_t::from_host(psn_base(w, to, h, v) + uint32_t(int32_t(small(v)))); break;
    case field::psn: h.psn = be32_t::from_host(v); break;
    case field::path: h.path = uint8_t(v % 6); break;
    case field::flags: h.flags = be16_t::from_host(uint16_t(v & 0xf)); break;
    case field::tx_ts: h.tx_ts = be32_t::from_host(v); break;
    case field::dst_conn: {
        const auto ids = w.conns(to);
        h.dst_conn = be32_t::from_host((v & 0x80) || ids.empty() ? v : ids[v % ids.size()]);
        break;
    }
    case field::meta:
        meta.ce = (v & 1) != 0;
        meta.plane = uint8_t((v >> 1) & 3);
        meta.src_addr = (v & 8) ? k_addr[to] ^ (v >> 8) : k_addr[1 - to];
        meta.udp_sport = uint16_t(v >> 16);
        break;
    default:
        if (!oi.has_msg) {
            break;
        }
        with<msg_header>(b, msg_off, [&](msg_header& m) {
            switch (f) {
            case field::msn: m.msn = be32_t::from_host(m.msn.host() + uint32_t(int32_t(int8_t(v)))); break;
            case field::ssn: m.ssn = be32_t::from_host(m.ssn.host() + uint32_t(int32_t(int8_t(v)))); break;
            case field::recv_seq:
                m.recv_seq = be32_t::from_host(m.recv_seq.host() + uint32_t(int32_t(int8_t(v))));
                break;
            case field::msg_len: m.msg_len = be32_t::from_host((v & 0x80000000u) ? v : v % 2048); break;
            case field::offset:
                m.offset = be32_t::from_host((v & 1) ? (v >> 1) % 2048 : ((v >> 1) % 8) * 256);
                break;
            case field::stream: m.stream = be16_t::from_host(uint16_t(v % 5)); break;
            default: break;
            }
        });
        break;
    }
    put(b, 0, h);

    switch (f) {
    case field::va:
        if (oi.has_reth) {
            with<reth>(b, reth_off, [&](reth& r) {
                const memory_region& mr = w.mem(to).region(int(v % k_regions));
                r.va = be64_t::from_host(mr.va + uint64_t(int64_t(int16_t(v >> 16))));
            });
        }
        break;
    case field::rkey:
        if (oi.has_reth) {
            with<reth>(b, reth_off, [&](reth& r) {
                r.rkey = be32_t::from_host((v & 0x80) ? v : w.mem(to).region(int(v % k_regions)).rkey);
            });
        }
        break;
    case field::imm:
        if (oi.has_imm) {
            with<imm_header>(b, imm_off, [&](imm_header& i) { i.imm = be32_t::from_host(v); });
        }
        break;
    case field::payload:
        if (oi.has_payload && b.size() >= sizeof(bth) + oi.ext_len) {
            b.resize(sizeof(bth) + oi.ext_len + v % 600, uint8_t(v >> 16));
        }
        break;
    case field::retype: retype(b, v); break;
    case field::ext:
        if (oi.ext_len > 0 && b.size() >= sizeof(bth) + oi.ext_len) {
            b[sizeof(bth) + v % oi.ext_len] = uint8_t(v >> 8);
        }
        break;
    case field::ack:
        if (h.op == opcode::ack) {
            with<ack_header>(b, sizeof(bth), [&](ack_header& a) {
                switch (v % 4) {
                case 0: a.sack[(v >> 2) % sizeof(a.sack)] = uint8_t(v >> 8); break;
                case 1:
                    a.rx_pkts = be16_t::from_host(uint16_t(v >> 2) & 0x3ff);
                    a.ce_pkts = be16_t::from_host(uint16_t(v >> 12));
                    break;
                case 2: a.rate_hint_mbps = be32_t::from_host(v >> 2); break;
                default: a.ts_echo = be32_t::from_host(uint32_t(w.now()) - (v >> 2)); break;
                }
            });
        }
        break;
    default: break;
    }
}

} // namespace metaroce::fuzz
