#include "dpdk/encap.hpp"

#include <cstring>

#include "metaroce/wire/headers.hpp"

namespace metaroce::dpdk {

namespace {

// One's-complement sum of a byte range in network order, folded to 32 bits.
uint32_t sum_bytes(const uint8_t* p, size_t n, uint32_t acc) noexcept
{
    uint64_t s = acc;
    while (n >= 4) {
        uint32_t w;
        std::memcpy(&w, p, 4);
        s += wire::byteswap_if_little(w);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        s += uint32_t(p[0]) << 8 | p[1];
        p += 2;
        n -= 2;
    }
    if (n == 1) {
        s += uint32_t(p[0]) << 8;
    }
    while (s >> 32) {
        s = (s & 0xffffffffu) + (s >> 32);
    }
    return uint32_t(s);
}

uint16_t fold(uint32_t s) noexcept
{
    while (s >> 16) {
        s = (s & 0xffffu) + (s >> 16);
    }
    return uint16_t(s);
}

uint32_t pseudo_sum(const ipv4_header& ip, size_t udp_len) noexcept
{
    const uint32_t src = ip.src_addr.host();
    const uint32_t dst = ip.dst_addr.host();
    uint64_t s = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + k_ip_proto_udp +
                 uint32_t(udp_len);
    return fold(uint32_t(s));
}

} // namespace

uint16_t ipv4_header_checksum(const ipv4_header& ip) noexcept
{
    ipv4_header copy = ip;
    copy.checksum = be16_t::from_host(0);
    return uint16_t(~fold(sum_bytes(reinterpret_cast<const uint8_t*>(&copy), sizeof copy, 0)));
}

uint16_t udp_pseudo_header_sum(const ipv4_header& ip, size_t udp_len) noexcept
{
    return fold(pseudo_sum(ip, udp_len));
}

// Checksum over pseudo-header, UDP header (checksum field as found) and payload.
uint16_t udp_checksum(const ipv4_header& ip, const uint8_t* udp, size_t udp_len) noexcept
{
    const uint16_t c = uint16_t(~fold(sum_bytes(udp, udp_len, pseudo_sum(ip, udp_len))));
    return c == 0 ? 0xffff : c; // 0 means "no checksum" over IPv4
}

size_t write_headers(uint8_t* frame, const tx_addressing& a, size_t payload_len,
                     const tx_csum_mode& csum) noexcept
{
    auto* h = reinterpret_cast<frame_headers*>(frame);
    const size_t udp_len = sizeof(udp_header) + payload_len;
    h->eth.dst = a.dst_mac;
    h->eth.src = a.src_mac;
    h->eth.ether_type = be16_t::from_host(k_ether_type_ipv4);
    h->ip.version_ihl = k_ipv4_version_ihl;
    h->ip.tos = a.ect ? ecn::ect0 : ecn::not_ect;
    h->ip.total_length = be16_t::from_host(uint16_t(sizeof(ipv4_header) + udp_len));
    h->ip.packet_id = be16_t::from_host(0);
    h->ip.fragment_offset = be16_t::from_host(k_ipv4_dont_fragment);
    h->ip.ttl = k_default_ttl;
    h->ip.protocol = k_ip_proto_udp;
    h->ip.checksum = be16_t::from_host(0);
    h->ip.src_addr = be32_t::from_host(a.src_ip);
    h->ip.dst_addr = be32_t::from_host(a.dst_ip);
    if (!csum.ip_offload) {
        h->ip.checksum = be16_t::from_host(ipv4_header_checksum(h->ip));
    }
    h->udp.src_port = be16_t::from_host(a.udp_sport);
    h->udp.dst_port = be16_t::from_host(a.udp_dport);
    h->udp.length = be16_t::from_host(uint16_t(udp_len));
    h->udp.checksum = be16_t::from_host(0);
    if (csum.udp_offload) {
        h->udp.checksum = be16_t::from_host(udp_pseudo_header_sum(h->ip, udp_len));
    } else if (csum.udp_software) {
        h->udp.checksum = be16_t::from_host(
            udp_checksum(h->ip, reinterpret_cast<const uint8_t*>(&h->udp), udp_len));
    }
    return sizeof(frame_headers) + payload_len;
}

rx_result parse_frame(std::span<const uint8_t> frame, uint16_t udp_dport,
                      const rx_csum_state& hw) noexcept
{
    rx_result r;
    if (frame.size() < sizeof(frame_headers)) {
        r.drop = frame.size() >= sizeof(eth_header) &&
                         reinterpret_cast<const eth_header*>(frame.data())->ether_type.host() !=
                             k_ether_type_ipv4
                     ? rx_drop::not_ipv4
                     : rx_drop::too_short;
        return r;
    }
    const auto* h = reinterpret_cast<const frame_headers*>(frame.data());
    if (h->eth.ether_type.host() != k_ether_type_ipv4) {
        r.drop = rx_drop::not_ipv4;
        return r;
    }
    const size_t ip_len = h->ip.total_length.host();
    if (h->ip.version_ihl != k_ipv4_version_ihl || ip_len < sizeof(ipv4_header) + sizeof(udp_header) ||
        ip_len > frame.size() - sizeof(eth_header)) {
        r.drop = rx_drop::bad_ip_header;
        return r;
    }
    if ((h->ip.fragment_offset.host() & 0x3fff) != 0) { // MF flag or an offset
        r.drop = rx_drop::fragment;
        return r;
    }
    if (h->ip.protocol != k_ip_proto_udp) {
        r.drop = rx_drop::not_udp;
        return r;
    }
    // Verified as RFC 1071 says, over the header with its checksum: recomputing and
    // comparing would refuse 0xffff, which incremental updates (RFC 1624) can produce.
    if (!hw.ip_good && fold(sum_bytes(reinterpret_cast<const uint8_t*>(&h->ip), sizeof h->ip, 0)) != 0xffff) {
        r.drop = rx_drop::bad_ip_checksum;
        return r;
    }
    const size_t udp_len = h->udp.length.host();
    if (udp_len != ip_len - sizeof(ipv4_header)) {
        r.drop = rx_drop::bad_udp_length;
        return r;
    }
    if (h->udp.dst_port.host() != udp_dport) {
        r.drop = rx_drop::wrong_port;
        return r;
    }
    if (!hw.udp_good && h->udp.checksum.host() != 0) {
        // Summing the header with its checksum in place must give 0xffff.
        const uint8_t* udp = reinterpret_cast<const uint8_t*>(&h->udp);
        const uint32_t s = sum_bytes(udp, udp_len, pseudo_sum(h->ip, udp_len));
        if (fold(s) != 0xffff) {
            r.drop = rx_drop::bad_udp_checksum;
            return r;
        }
    }
    r.pkt.src_mac = h->eth.src;
    r.pkt.src_ip = h->ip.src_addr.host();
    r.pkt.dst_ip = h->ip.dst_addr.host();
    r.pkt.udp_sport = h->udp.src_port.host();
    r.pkt.ce = (h->ip.tos & ecn::mask) == ecn::ce;
    r.pkt.payload = frame.subspan(sizeof(frame_headers), udp_len - sizeof(udp_header));
    return r;
}

std::string_view to_string(rx_drop d) noexcept
{
    switch (d) {
    case rx_drop::none: return "none";
    case rx_drop::too_short: return "too_short";
    case rx_drop::not_ipv4: return "not_ipv4";
    case rx_drop::bad_ip_header: return "bad_ip_header";
    case rx_drop::fragment: return "fragment";
    case rx_drop::not_udp: return "not_udp";
    case rx_drop::bad_udp_length: return "bad_udp_length";
    case rx_drop::bad_ip_checksum: return "bad_ip_checksum";
    case rx_drop::bad_udp_checksum: return "bad_udp_checksum";
    case rx_drop::wrong_port: return "wrong_port";
    case rx_drop::count_: break;
    }
    return "unknown";
}

} // namespace metaroce::dpdk
