// Fuzzes the DPDK receive path's frame parser, dpdk::parse_frame (pure bytes, no EAL).
// The first input byte picks what the NIC claims to have verified (both hw checksum
// states) and the port; the rest is the frame. Checked:
// - no read outside the frame (ASan), a known drop reason;
// - a frame is accepted exactly when a byte-wise reference (written here from RFC 791/768
//   and the encap.hpp contract: Ethernet II + IPv4 without options, not fragmented, UDP
//   to the port, lengths consistent, checksums verified unless the NIC did) accepts it,
//   with the same addresses, port, CE bit and payload;
// - an accepted frame rebuilt with write_headers (every checksum mode) parses again to
//   the same fields.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dpdk/encap.hpp"
#include "metaroce/wire/headers.hpp"

using namespace metaroce;
using namespace metaroce::dpdk;

namespace {

[[noreturn]] void fail(const char* what)
{
    std::fprintf(stderr, "\n*** fuzz_frame invariant violated: %s\n", what);
    std::abort();
}

void require(bool ok, const char* what)
{
    if (!ok) {
        fail(what);
    }
}

uint32_t be(const uint8_t* p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) {
        v = v << 8 | p[i];
    }
    return v;
}

// RFC 1071 sum of 16-bit big-endian words, odd byte padded with zero.
uint32_t sum16(const uint8_t* p, size_t n, uint32_t s)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        s += uint32_t(p[i]) << 8 | p[i + 1];
    }
    if (n % 2 != 0) {
        s += uint32_t(p[n - 1]) << 8;
    }
    while (s >> 16) {
        s = (s & 0xffff) + (s >> 16);
    }
    return s;
}

struct expect {
    bool accept = false;
    uint32_t src_ip = 0, dst_ip = 0;
    uint16_t sport = 0;
    bool ce = false;
    size_t payload_off = 0, payload_len = 0;
};

expect reference(const uint8_t* f, size_t n, uint16_t port, const rx_csum_state& hw)
{
    expect e;
    if (n < 42 || be(f + 12, 2) != 0x0800) {
        return e;
    }
    const uint8_t* ip = f + 14;
    const size_t ip_len = be(ip + 2, 2);
    if (ip[0] != 0x45 || ip_len < 28 || ip_len > n - 14) {
        return e;
    }
    if ((be(ip + 6, 2) & 0x3fff) != 0 || ip[9] != 17) {
        return e;
    }
    if (!hw.ip_good && sum16(ip, 20, 0) != 0xffff) {
        return e;
    }
    const uint8_t* udp = ip + 20;
    const size_t udp_len = be(udp + 4, 2);
    if (udp_len != ip_len - 20 || be(udp + 2, 2) != port) {
        return e;
    }
    if (!hw.udp_good && be(udp + 6, 2) != 0) {
        uint32_t s = sum16(ip + 12, 8, 0);   // pseudo-header: addresses,
        s = sum16(nullptr, 0, s + 17 + uint32_t(udp_len)); // protocol and UDP length
        if (sum16(udp, udp_len, s) != 0xffff) {
            return e;
        }
    }
    e.accept = true;
    e.src_ip = be(ip + 12, 4);
    e.dst_ip = be(ip + 16, 4);
    e.sport = uint16_t(be(udp, 2));
    e.ce = (ip[1] & 3) == 3;
    e.payload_off = 42;
    e.payload_len = udp_len - 8;
    return e;
}

// Writes the parsed frame again with write_headers in one checksum mode and parses it
// with the hw state that mode needs.
void roundtrip(const rx_parsed& p, uint16_t port, int mode)
{
    tx_csum_mode csum;
    csum.ip_offload = mode == 1 || mode == 2;
    csum.udp_offload = mode == 2;
    csum.udp_software = mode == 3;
    tx_addressing a;
    a.src_mac = p.src_mac;
    a.src_ip = p.src_ip;
    a.dst_ip = p.dst_ip;
    a.udp_sport = p.udp_sport;
    a.udp_dport = port;
    a.ect = mode % 2 == 0;
    std::vector<uint8_t> frame(k_frame_overhead + p.payload.size());
    if (!p.payload.empty()) {
        std::memcpy(frame.data() + k_frame_overhead, p.payload.data(), p.payload.size());
    }
    const size_t len = write_headers(frame.data(), a, p.payload.size(), csum);
    require(len == frame.size(), "write_headers returned another length");
    rx_csum_state hw;
    hw.ip_good = csum.ip_offload;
    hw.udp_good = csum.udp_offload;
    const rx_result r = parse_frame(frame, port, hw);
    require(r.drop == rx_drop::none, "a frame write_headers built is dropped");
    require(r.pkt.src_ip == p.src_ip && r.pkt.dst_ip == p.dst_ip && r.pkt.udp_sport == p.udp_sport &&
                r.pkt.src_mac == p.src_mac && !r.pkt.ce,
            "a rebuilt frame parses to other fields");
    require(r.pkt.payload.size() == p.payload.size() &&
                std::memcmp(r.pkt.payload.data(), frame.data() + k_frame_overhead, p.payload.size()) == 0,
            "a rebuilt frame has another payload");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    rx_csum_state hw;
    hw.ip_good = (data[0] & 1) != 0;
    hw.udp_good = (data[0] & 2) != 0;
    const uint16_t port = (data[0] & 4) ? uint16_t(data[0] << 8 | 0xbc) : wire::k_udp_dst_port;
    // A copy of exactly the frame, so ASan sees any read past its end.
    const std::vector<uint8_t> frame(data + 1, data + size);
    const rx_result r = parse_frame(frame, port, hw);
    require(r.drop < rx_drop::count_ && to_string(r.drop) != "unknown", "unknown drop reason");
    const expect e = reference(frame.data(), frame.size(), port, hw);
    require((r.drop == rx_drop::none) == e.accept, e.accept ? "a valid frame is dropped" : "an invalid frame is accepted");
    if (!e.accept) {
        return 0;
    }
    require(r.pkt.src_ip == e.src_ip && r.pkt.dst_ip == e.dst_ip && r.pkt.udp_sport == e.sport &&
                r.pkt.ce == e.ce,
            "parsed addresses, port or CE differ from the frame");
    require(std::memcmp(&r.pkt.src_mac, frame.data() + 6, 6) == 0, "parsed source MAC differs");
    require(r.pkt.payload.data() == frame.data() + e.payload_off && r.pkt.payload.size() == e.payload_len,
            "payload is not the UDP payload");
    for (int mode = 0; mode < 4; ++mode) {
        roundtrip(r.pkt, port, mode);
    }
    return 0;
}
