#include "tester.hpp"

#include <algorithm>
#include <cstring>

#include "dpdk/encap.hpp"

namespace metaroce::conformance {

namespace {

uint16_t rd16(const std::vector<uint8_t>& b, size_t off)
{
    return off + 2 <= b.size() ? uint16_t(b[off] << 8 | b[off + 1]) : 0xffff;
}
uint32_t rd32(const std::vector<uint8_t>& b, size_t off)
{
    return off + 4 <= b.size() ? uint32_t(rd16(b, off)) << 16 | rd16(b, off + 2) : 0xffffffff;
}

bool is_control(wire::opcode op)
{
    return uint8_t(op) >= 0x20;
}

// Fixed header bytes after the BTH, as the spec's opcode table gives them (spec 3.0),
// written out here so the audit does not trust the codec it audits.
size_t spec_fixed_len(wire::opcode op)
{
    switch (op) {
    case wire::opcode::write: return 40;
    case wire::opcode::write_imm: return 44;
    case wire::opcode::send: return 24;
    case wire::opcode::send_imm: return 28;
    case wire::opcode::read_req: return 40;
    case wire::opcode::read_resp: return 24;
    case wire::opcode::ack: return 48;
    case wire::opcode::nak: return 8;
    case wire::opcode::connect:
    case wire::opcode::accept: return 40;
    case wire::opcode::close:
    case wire::opcode::close_ack:
    case wire::opcode::probe:
    case wire::opcode::probe_ack: return 8;
    case wire::opcode::cookie: return 24;
    }
    return 0;
}

} // namespace

bool rx_pkt::sack_bit(uint32_t i) const
{
    const wire::ack_header* a = r.pkt.ack;
    return a != nullptr && i < wire::k_sack_bits && ((a->sack[i / 8] >> (i % 8)) & 1u) != 0;
}

hello_fields decode_hello(const wire::hello_header& h)
{
    hello_fields f;
    f.nonce = h.nonce.host();
    f.src_conn = h.src_conn.host();
    f.isn = h.isn.host();
    f.paths = h.paths.host();
    f.mtu = h.mtu.host();
    f.max_streams = h.max_streams.host();
    f.max_msgs = h.max_msgs.host();
    f.planes = h.planes;
    f.rq_depth = h.rq_depth.host();
    f.cookie = h.cookie.host();
    return f;
}

wire::hello_header encode_hello(const hello_fields& f)
{
    wire::hello_header h{};
    h.nonce = wire::be64_t::from_host(f.nonce);
    h.src_conn = wire::be32_t::from_host(f.src_conn);
    h.isn = wire::be32_t::from_host(f.isn);
    h.paths = wire::be16_t::from_host(f.paths);
    h.mtu = wire::be16_t::from_host(f.mtu);
    h.max_streams = wire::be16_t::from_host(f.max_streams);
    h.max_msgs = wire::be16_t::from_host(f.max_msgs);
    h.planes = f.planes;
    h.rq_depth = wire::be16_t::from_host(f.rq_depth);
    h.cookie = wire::be64_t::from_host(f.cookie);
    return h;
}

bool rx_path::record(uint32_t psn)
{
    const uint32_t i = psn - expected;
    if (int32_t(i) < 0 || i >= wire::k_sack_bits || bits[i]) {
        return false;
    }
    bits[i] = true;
    while (bits[0]) {
        bits >>= 1;
        ++expected;
    }
    return true;
}

std::string hex(std::span<const uint8_t> b, size_t max)
{
    static const char* k = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < b.size() && i < max; ++i) {
        s += k[b[i] >> 4];
        s += k[b[i] & 15];
    }
    if (b.size() > max) {
        s += "...";
    }
    return s;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = uint8_t(seed + i * 7 + (i >> 8) * 3 + 1);
    }
    return v;
}

tester::tester(target& tgt, uint64_t time_scale) : t(tgt), scale(time_scale) {}

uint32_t tester::new_conn_id()
{
    const uint32_t id = next_id_;
    next_id_ += 0x10001;
    return id == 0 ? new_conn_id() : id;
}

uint64_t tester::new_nonce()
{
    uint64_t z = (nonce_state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

tconn* tester::find(uint32_t id)
{
    auto it = conns.find(id);
    return it == conns.end() ? nullptr : it->second.get();
}

// ---- building -----------------------------------------------------------------

std::vector<uint8_t> tester::bth_only(const wire::bth_fields& b, size_t body_len)
{
    std::vector<uint8_t> v(sizeof(wire::bth) + body_len, 0);
    auto* h = reinterpret_cast<wire::bth*>(v.data());
    h->version = wire::k_version;
    h->op = b.op;
    h->flags = wire::be16_t::from_host(b.flags);
    h->dst_conn = wire::be32_t::from_host(b.dst_conn);
    h->psn = wire::be32_t::from_host(b.psn);
    h->path = b.path;
    h->plane = b.plane;
    h->tx_ts = wire::be32_t::from_host(b.tx_ts);
    return v;
}

std::vector<uint8_t> tester::hello_pkt(wire::opcode op, uint32_t dst_conn, const hello_fields& h)
{
    wire::bth_fields b;
    b.op = op;
    b.dst_conn = dst_conn;
    b.tx_ts = now32();
    std::vector<uint8_t> v(sizeof(wire::bth) + sizeof(wire::hello_header));
    v.resize(wire::build_hello(v, b, encode_hello(h)));
    return v;
}

std::vector<uint8_t> tester::data_pkt(const wire::bth_fields& b, const wire::msg_fields& m,
                                      std::span<const uint8_t> payload)
{
    std::vector<uint8_t> v(wire::data_header_len(b.op) + payload.size());
    v.resize(wire::build_data(v, b, m, payload));
    return v;
}

std::vector<uint8_t> tester::ack_pkt(const tconn& c, uint8_t path, uint32_t cum,
                                     const std::bitset<wire::k_sack_bits>& sack, uint32_t ts_echo,
                                     uint16_t rx_pkts, uint16_t ce_pkts, uint32_t hint)
{
    wire::bth_fields b;
    b.op = wire::opcode::ack;
    b.dst_conn = c.iut_id;
    b.psn = cum;
    b.path = path;
    b.plane = uint8_t(path % std::max<uint8_t>(c.planes, 1));
    b.tx_ts = now32();
    wire::ack_header a{};
    a.ts_echo = wire::be32_t::from_host(ts_echo);
    a.rate_hint_mbps = wire::be32_t::from_host(hint);
    a.rx_pkts = wire::be16_t::from_host(rx_pkts);
    a.ce_pkts = wire::be16_t::from_host(ce_pkts);
    for (uint32_t i = 1; i < wire::k_sack_bits; ++i) {
        if (sack[i]) {
            a.sack[i / 8] = uint8_t(a.sack[i / 8] | (1u << (i % 8)));
        }
    }
    std::vector<uint8_t> v(sizeof(wire::bth) + sizeof a);
    v.resize(wire::build_ack(v, b, a));
    return v;
}

std::vector<uint8_t> tester::nak_pkt(const tconn& c, uint8_t path, uint32_t psn, wire::nak_reason r,
                                     uint16_t stream, uint32_t msn)
{
    wire::bth_fields b;
    b.op = wire::opcode::nak;
    b.dst_conn = c.iut_id;
    b.psn = psn;
    b.path = path;
    b.tx_ts = now32();
    wire::nak_header n{};
    n.reason = r;
    n.stream = wire::be16_t::from_host(stream);
    n.msn = wire::be32_t::from_host(msn);
    std::vector<uint8_t> v(sizeof(wire::bth) + sizeof n);
    v.resize(wire::build_nak(v, b, n));
    return v;
}

std::vector<uint8_t> tester::close_pkt(wire::opcode op, uint32_t dst_conn, uint32_t src_conn,
                                       uint32_t token)
{
    wire::bth_fields b;
    b.op = op;
    b.dst_conn = dst_conn;
    b.tx_ts = now32();
    wire::close_header h{};
    h.src_conn = wire::be32_t::from_host(src_conn);
    h.token = wire::be32_t::from_host(token);
    std::vector<uint8_t> v(sizeof(wire::bth) + sizeof h);
    v.resize(wire::build_close(v, b, h));
    return v;
}

std::vector<uint8_t> tester::probe_pkt(wire::opcode op, uint32_t dst_conn, uint8_t path,
                                       uint32_t token, uint32_t ts_echo)
{
    wire::bth_fields b;
    b.op = op;
    b.dst_conn = dst_conn;
    b.path = path;
    b.tx_ts = now32();
    wire::probe_header h{};
    h.token = wire::be32_t::from_host(token);
    h.ts_echo = wire::be32_t::from_host(ts_echo);
    std::vector<uint8_t> v(sizeof(wire::bth) + sizeof h);
    v.resize(wire::build_probe(v, b, h));
    return v;
}

sent_msg tester::build_message(tconn& c, const msg_spec& m)
{
    sent_msg s;
    const wire::opcode_info& oi = wire::info(m.op);
    s.msn = m.msn ? *m.msn : c.next_msn++;
    s.ssn = m.ssn ? *m.ssn : (m.op == wire::opcode::read_resp ? 0 : c.next_ssn[m.stream]++);
    s.recv_seq = oi.consumes_recv ? (m.recv_seq ? *m.recv_seq : c.next_recv_seq[m.stream]++) : 0;
    const bool read = m.op == wire::opcode::read_req;
    const uint32_t len = read ? m.read_len : uint32_t(m.payload.size());
    const uint32_t mtu = std::max<uint16_t>(c.mtu, 1);
    const uint32_t n = read || len == 0 ? 1 : (len + mtu - 1) / mtu;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t off = k * mtu;
        const uint32_t plen = read ? 0 : std::min(mtu, len - off);
        out_pkt p;
        p.path = uint8_t(m.path >= 0 ? m.path : int(c.rr++ % c.paths));
        p.psn = take_psn(c, p.path);
        wire::bth_fields b;
        b.op = m.op;
        b.flags = k + 1 == n ? (wire::bth_flag::last | wire::bth_flag::ack_req) : 0;
        b.dst_conn = c.iut_id;
        b.psn = p.psn;
        b.path = p.path;
        b.plane = uint8_t(p.path % std::max<uint8_t>(c.planes, 1));
        b.tx_ts = now32();
        wire::msg_fields f;
        f.stream = m.stream;
        f.msn = s.msn;
        f.ssn = s.ssn;
        f.recv_seq = s.recv_seq;
        f.msg_len = len;
        f.offset = off;
        f.va = m.va;
        f.rkey = m.rkey;
        f.imm = m.imm;
        p.bytes = data_pkt(b, f, std::span<const uint8_t>(m.payload).subspan(read ? 0 : off, plen));
        s.pkts.push_back(std::move(p));
    }
    return s;
}

sent_msg tester::send_message(tconn& c, const msg_spec& m)
{
    sent_msg s = build_message(c, m);
    for (const out_pkt& p : s.pkts) {
        send_pkt(c, p);
    }
    return s;
}

// ---- sending ------------------------------------------------------------------

void tester::send(std::vector<uint8_t> bytes, const tx_opts& o)
{
    datagram d;
    d.bytes = std::move(bytes);
    d.src_addr = o.src_addr;
    d.dst_addr = k_iut_addr;
    d.plane = o.plane;
    d.udp_sport = o.udp_sport != 0 ? o.udp_sport : wire::k_udp_sport_min;
    d.ce = o.ce;
    t.send(d);
}

void tester::send_on(tconn& c, std::vector<uint8_t> bytes, uint8_t path, bool ce)
{
    tx_opts o;
    o.src_addr = c.addr;
    o.plane = uint8_t(path % std::max<uint8_t>(c.planes, 1));
    o.udp_sport = c.sport(path);
    o.ce = ce;
    send(std::move(bytes), o);
}

// ---- receiving ----------------------------------------------------------------

std::optional<rx_pkt> tester::expect(const pkt_pred& pred, uint64_t timeout_ns)
{
    const uint64_t deadline = t.now_ns() + timeout_ns;
    for (;;) {
        // A zero wait still takes what is already there.
        const uint64_t now = t.now_ns();
        auto d = std::make_shared<datagram>();
        if (!t.recv(*d, now < deadline ? deadline - now : 0)) {
            return std::nullopt;
        }
        rx_pkt p;
        p.d = d;
        p.r = wire::parse(d->bytes);
        handle(p);
        if (pred(p)) {
            return p;
        }
    }
}

rx_pkt tester::must(const pkt_pred& pred, uint64_t timeout_ns, const std::string& what)
{
    auto p = expect(pred, timeout_ns);
    if (!p) {
        throw test_failure{"no " + what + " within " + std::to_string(timeout_ns / 1000) + " us"};
    }
    return *p;
}

std::vector<rx_pkt> tester::collect(const pkt_pred& pred, uint64_t window_ns)
{
    std::vector<rx_pkt> out;
    const uint64_t deadline = t.now_ns() + window_ns;
    for (;;) {
        const uint64_t now = t.now_ns();
        auto p = expect(pred, now < deadline ? deadline - now : 0);
        if (!p) {
            break;
        }
        out.push_back(*p);
    }
    return out;
}

pkt_pred tester::op_for(const tconn& c, wire::opcode op)
{
    const uint32_t id = c.id;
    return [id, op](const rx_pkt& p) { return p.is(op) && p.v().dst_conn == id; };
}

pkt_pred tester::ack_for(const tconn& c, int path)
{
    const uint32_t id = c.id;
    return [id, path](const rx_pkt& p) {
        return p.is(wire::opcode::ack) && p.v().dst_conn == id && (path < 0 || p.v().path == path);
    };
}

pkt_pred tester::nak_for(const tconn& c)
{
    return op_for(c, wire::opcode::nak);
}

pkt_pred tester::reply_for(const tconn& c)
{
    const uint32_t id = c.id;
    return [id](const rx_pkt& p) {
        return (p.is(wire::opcode::ack) || p.is(wire::opcode::nak)) && p.v().dst_conn == id;
    };
}

pkt_pred tester::data_for(const tconn& c, int stream)
{
    const uint32_t id = c.id;
    return [id, stream](const rx_pkt& p) {
        return p.ok() && wire::info(p.op()).reliable && p.v().dst_conn == id &&
               (stream < 0 || p.v().stream == stream);
    };
}

void tester::handle(const rx_pkt& p)
{
    audit(p);
    if (!p.ok()) {
        return;
    }
    if (tconn* c = find(p.v().dst_conn); c != nullptr && c->open) {
        auto_answer(*c, p);
    }
}

void tester::auto_answer(tconn& c, const rx_pkt& p)
{
    const wire::packet_view& v = p.v();
    if (wire::info(v.op).reliable && v.path < c.rx.size()) {
        rx_path& r = c.rx[v.path];
        r.last_ts = v.tx_ts;
        r.record(v.psn);
        if (c.auto_ack) {
            tx_opts o;
            o.src_addr = c.addr;
            o.plane = p.d->plane;
            o.udp_sport = c.sport(v.path);
            send(ack_pkt(c, v.path, r.expected, r.bits, v.tx_ts, 1, 0), o);
        }
    } else if (v.op == wire::opcode::probe && c.auto_control) {
        tx_opts o;
        o.src_addr = c.addr;
        o.plane = p.d->plane;
        o.udp_sport = p.d->udp_sport;
        send(probe_pkt(wire::opcode::probe_ack, c.iut_id, v.path, v.probe->token.host(), v.tx_ts), o);
    } else if (v.op == wire::opcode::close && c.auto_control) {
        tx_opts o;
        o.src_addr = c.addr;
        o.plane = p.d->plane;
        o.udp_sport = p.d->udp_sport;
        send(close_pkt(wire::opcode::close_ack, c.iut_id, c.id, c.token()), o);
        c.open = false;
    }
}

// Format rules every packet of the IUT must follow, checked on everything it sends
// during the run (reported by the audit tests at the end).
void tester::audit(const rx_pkt& p)
{
    const datagram& d = *p.d;
    const auto bad = [&](const char* rule, const std::string& what) {
        if (violations.size() < 200) {
            violations.push_back({rule, what});
        }
    };
    ++checked["2.3"];
    if (d.udp_sport < wire::k_udp_sport_min) {
        bad("2.3", "UDP source port " + std::to_string(d.udp_sport) + " below 49152");
    }
    ++checked["2.4"];
    if (!d.ect) {
        bad("2.4", "packet sent without ECT(0)");
    }
    if (!d.frame.empty()) {
        ++checked["2.1"];
        ++checked["2.2"];
        ++checked["2.5"];
        const auto* h = reinterpret_cast<const dpdk::frame_headers*>(d.frame.data());
        if (d.frame.size() < sizeof *h) {
            bad("2.1", "frame shorter than Ethernet/IPv4/UDP headers");
        } else {
            if (h->eth.ether_type.host() != dpdk::k_ether_type_ipv4) {
                bad("2.1", "EtherType not 0x0800");
            }
            if (h->ip.version_ihl != 0x45) {
                bad("2.1", "IPv4 version/IHL not 0x45");
            }
            if ((h->ip.fragment_offset.host() & 0x4000) == 0) {
                bad("2.1", "DF not set");
            }
            if (h->ip.ttl != 64) {
                bad("2.1", "TTL " + std::to_string(h->ip.ttl) + " not 64");
            }
            if (h->ip.protocol != 17) {
                bad("2.1", "IP protocol not UDP");
            }
            if ((h->ip.tos & dpdk::ecn::mask) != dpdk::ecn::ect0) {
                bad("2.4", "IPv4 ECN field not ECT(0)");
            }
            if (h->udp.dst_port.host() != wire::k_udp_dst_port) {
                bad("2.2", "UDP destination port " + std::to_string(h->udp.dst_port.host()));
            }
            if (dpdk::ipv4_header_checksum(h->ip) != h->ip.checksum.host()) {
                bad("2.5", "wrong IPv4 header checksum");
            }
            const size_t udp_len = h->udp.length.host();
            ++checked["2.6"];
            if (udp_len != d.bytes.size() + 8) {
                bad("2.6", "UDP length " + std::to_string(udp_len) + " for a " +
                               std::to_string(d.bytes.size()) + "-byte transport packet");
            } else if (h->udp.checksum.host() != 0 &&
                       dpdk::udp_checksum(h->ip, d.frame.data() + 34, udp_len) != 0xffff &&
                       dpdk::udp_checksum(h->ip, d.frame.data() + 34, udp_len) != 0) {
                // Summing over a correct checksum in place gives 0 (complemented 0xffff).
                bad("2.5", "wrong UDP checksum");
            }
        }
    }
    ++checked["3.1"];
    if (!p.ok()) {
        bad("3.1", std::string("IUT packet fails parsing: ") + std::string(wire::to_string(p.r.error)) +
                       " (" + hex(d.bytes) + ")");
        return;
    }
    const wire::packet_view& v = p.v();
    const auto& b = d.bytes;
    ++checked["3.0"];
    const size_t fixed = spec_fixed_len(v.op);
    const bool payload = wire::info(v.op).has_payload;
    if (b.size() < 20 + fixed || (!payload && b.size() != 20 + fixed)) {
        bad("3.0", std::string(wire::info(v.op).name) + " of " + std::to_string(b.size()) +
                       " bytes, the table says " + std::to_string(20 + fixed));
    }
    if (rd16(b, 14) != 0) {
        bad("3.1", "BTH reserved field not 0");
    }
    if (is_control(v.op) && v.psn != 0) {
        bad("3.1", std::string(wire::info(v.op).name) + " with psn " + std::to_string(v.psn) + " (control: 0)");
    }
    if (v.op == wire::opcode::connect && v.dst_conn != 0) {
        bad("3.1", "CONNECT with dst_conn != 0");
    }
    const tconn* c = nullptr;
    if (auto it = conns.find(v.dst_conn); it != conns.end()) {
        c = it->second.get();
    }
    if (wire::info(v.op).has_msg) {
        ++checked["3.2"];
        if (rd16(b, 22) != 0) {
            bad("3.2", "MSG reserved field not 0");
        }
        if (!wire::info(v.op).consumes_recv && v.recv_seq != 0) {
            bad("3.2", std::string(wire::info(v.op).name) + " with recv_seq " + std::to_string(v.recv_seq));
        }
        if (v.op == wire::opcode::read_resp && v.ssn != 0) {
            bad("3.2", "READ_RESP with ssn != 0");
        }
        if (wire::info(v.op).has_reth) {
            ++checked["3.3"];
            if (rd32(b, 56) != 0) {
                bad("3.3", "RETH reserved field not 0");
            }
        }
        if (c != nullptr && c->mtu != 0) {
            ++checked["3.5"];
            if (v.payload.size() > c->mtu) {
                bad("3.5", "payload of " + std::to_string(v.payload.size()) + " bytes over the mtu " +
                               std::to_string(c->mtu));
            }
        }
    }
    if (v.op == wire::opcode::ack) {
        ++checked["3.6"];
        const uint32_t also = rd32(b, 32);
        if ((v.flags & wire::bth_flag::also_acks) == 0 && also != 0) {
            bad("3.6", "ACK also_cum not 0 without ALSO_ACKS");
        }
        if ((v.flags & wire::bth_flag::also_acks) != 0 &&
            ((also >> 24) == v.path || (c != nullptr && c->paths != 0 && (also >> 24) >= c->paths))) {
            bad("3.6", "ACK also_cum names path " + std::to_string(also >> 24) +
                           " (its own, or beyond the connection's paths)");
        }
        if (p.sack_bit(0)) {
            bad("3.6", "ACK with SACK bit 0 set");
        }
    }
    if (v.op == wire::opcode::nak) {
        ++checked["3.7"];
        if (b[21] != 0) {
            bad("3.7", "NAK reserved byte not 0");
        }
        if (uint8_t(v.nak->reason) < 1 || uint8_t(v.nak->reason) > 7) {
            bad("3.7", "NAK reason " + std::to_string(uint8_t(v.nak->reason)));
        }
    }
    if (v.hello != nullptr) {
        ++checked["3.8"];
        const hello_fields h = decode_hello(*v.hello);
        // Bytes 28..31 are the CONNECT's rtt_us and the ACCEPT's rate hint (spec 3.8).
        if (b[45] != 0) {
            bad("3.8", "HELLO reserved byte not 0");
        }
        if (h.src_conn == 0 || h.paths == 0 || h.paths > 256 || h.mtu < 64 || h.max_streams == 0 ||
            h.max_msgs == 0 || h.planes == 0) {
            bad("3.8", "HELLO field out of range");
        }
        if (v.op == wire::opcode::accept && h.cookie != 0) {
            bad("3.8", "ACCEPT with a non-zero cookie");
        }
    }
    if (v.close != nullptr) {
        ++checked["3.9"];
        if (v.close->src_conn.host() == 0 && v.op == wire::opcode::close) {
            bad("3.9", "CLOSE with src_conn 0");
        }
    }
}

// ---- connections --------------------------------------------------------------

tconn& tester::connect(const offer& o)
{
    auto owned = std::make_unique<tconn>();
    tconn& c = *owned;
    c.id = o.id ? *o.id : new_conn_id();
    c.nonce = new_nonce();
    c.isn = o.isn ? *o.isn : uint32_t(new_nonce());
    c.open = false; // no auto answers until established
    conns[c.id] = std::move(owned);
    hello_fields h;
    h.nonce = c.nonce;
    h.src_conn = c.id;
    h.isn = c.isn;
    h.paths = o.paths;
    h.mtu = o.mtu;
    h.max_streams = o.max_streams;
    h.max_msgs = o.max_msgs;
    h.planes = o.planes;
    send(hello_pkt(wire::opcode::connect, 0, h), {c.addr, 0, c.sport(0), false});
    const uint32_t id = c.id;
    const auto answer = [id](const rx_pkt& p) {
        return (p.is(wire::opcode::cookie) || p.is(wire::opcode::accept)) && p.v().dst_conn == id;
    };
    rx_pkt r = must(answer, reply_ns(), "COOKIE or ACCEPT for our CONNECT");
    if (r.is(wire::opcode::cookie)) {
        if (r.v().cookie->nonce.host() != c.nonce) {
            throw test_failure{"COOKIE does not echo the CONNECT's nonce"};
        }
        h.cookie = r.v().cookie->cookie.host();
        c.cookie = h.cookie;
        send(hello_pkt(wire::opcode::connect, 0, h), {c.addr, 0, c.sport(0), false});
        r = must(op_for(c, wire::opcode::accept), reply_ns(), "ACCEPT for the CONNECT with the cookie");
    }
    return finish_connect(o, c, r);
}

tconn& tester::finish_connect(const offer& o, tconn& c, const rx_pkt& accept)
{
    const hello_fields a = decode_hello(*accept.v().hello);
    if (a.nonce != c.nonce) {
        throw test_failure{"ACCEPT does not echo the CONNECT's nonce"};
    }
    c.accept = a;
    c.iut_id = a.src_conn;
    c.iut_isn = a.isn;
    c.paths = std::min(a.paths, o.paths);
    c.mtu = std::min(a.mtu, o.mtu);
    c.max_streams = std::min(a.max_streams, o.max_streams);
    c.max_msgs = std::min(a.max_msgs, o.max_msgs);
    c.planes = std::min(a.planes, o.planes);
    c.next_psn.assign(c.paths, c.isn);
    c.rx.assign(c.paths, rx_path{});
    for (rx_path& r : c.rx) {
        r.expected = c.iut_isn;
    }
    c.open = true;
    // Let what an application on the IUT does at once (metaroce's app advertises its
    // region with a SEND) go by, acknowledged.
    idle(quiet_ns() / 4);
    return c;
}

tester::incoming tester::wait_connect()
{
    const auto connect_pred = [](const rx_pkt& p) {
        return p.is(wire::opcode::connect) && p.d->src_addr == k_iut_addr;
    };
    rx_pkt first = must(connect_pred, reply_ns(), "CONNECT from the IUT");
    hello_fields in = decode_hello(*first.v().hello);
    const uint64_t cookie = new_nonce() | 1;
    std::vector<uint8_t> ck = bth_only({wire::opcode::cookie, 0, in.src_conn, 0, 0, 0, now32()},
                                       sizeof(wire::cookie_header));
    auto* body = reinterpret_cast<wire::cookie_header*>(ck.data() + sizeof(wire::bth));
    body->nonce = wire::be64_t::from_host(in.nonce);
    body->cookie = wire::be64_t::from_host(cookie);
    send(ck, {k_tester_addr, first.d->plane, first.d->udp_sport, false});
    const uint64_t nonce = in.nonce;
    rx_pkt again = must(
        [&](const rx_pkt& p) {
            return connect_pred(p) && decode_hello(*p.v().hello).nonce == nonce &&
                   decode_hello(*p.v().hello).cookie != 0;
        },
        reply_ns(), "CONNECT echoing our cookie");
    in = decode_hello(*again.v().hello);
    if (in.cookie != cookie) {
        throw test_failure{"the IUT's second CONNECT carries cookie " + std::to_string(in.cookie) +
                           ", not ours"};
    }
    return {in, again.d->plane, again.d->udp_sport};
}

tconn& tester::send_accept(const incoming& inc, const offer& o)
{
    const hello_fields& in = inc.hello;
    auto owned = std::make_unique<tconn>();
    tconn& c = *owned;
    c.id = o.id ? *o.id : new_conn_id();
    c.tester_initiated = false;
    c.nonce = in.nonce;
    c.isn = o.isn ? *o.isn : uint32_t(new_nonce());
    c.iut_id = in.src_conn;
    c.iut_isn = in.isn;
    c.paths = std::min(in.paths, o.paths);
    c.mtu = std::min(in.mtu, o.mtu);
    c.max_streams = std::min(in.max_streams, o.max_streams);
    c.max_msgs = std::min(in.max_msgs, o.max_msgs);
    c.planes = std::min(in.planes, o.planes);
    c.next_psn.assign(c.paths, c.isn);
    c.rx.assign(c.paths, rx_path{});
    for (rx_path& r : c.rx) {
        r.expected = c.iut_isn;
    }
    hello_fields a;
    a.nonce = in.nonce;
    a.src_conn = c.id;
    a.isn = c.isn;
    a.paths = c.paths;
    a.mtu = c.mtu;
    a.max_streams = c.max_streams;
    a.max_msgs = c.max_msgs;
    a.planes = c.planes;
    c.accept = a;
    conns[c.id] = std::move(owned);
    send(hello_pkt(wire::opcode::accept, in.src_conn, a), {k_tester_addr, inc.plane, inc.udp_sport, false});
    idle(quiet_ns() / 4);
    return c;
}

tconn& tester::accept(const offer& o)
{
    return send_accept(wait_connect(), o);
}

void tester::manual_acks(tconn& c)
{
    idle(quiet_ns() / 4);
    c.auto_ack = false;
}

void tester::close(tconn& c)
{
    const uint32_t id = c.id;
    if (c.open) {
        c.open = false;
        send_on(c, close_pkt(wire::opcode::close, c.iut_id, c.id, c.token()), 0);
        expect(op_for(c, wire::opcode::close_ack), reply_ns());
    }
    conns.erase(id);
}

void tester::close_all()
{
    std::vector<uint32_t> ids;
    for (const auto& [id, c] : conns) {
        ids.push_back(id);
    }
    for (uint32_t id : ids) {
        if (tconn* c = find(id)) {
            close(*c);
        }
    }
}

} // namespace metaroce::conformance
