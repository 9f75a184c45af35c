// Prints, for every MetaRoCE frame of a classic pcap file, the fields the dissector
// test compares, decoded by the codec itself, in the format of
//   tshark -X lua_script:metaroce.lua -T fields -e metaroce.opcode -e ... (see FIELDS)
// so a capture can be checked field by field against the dissector.
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dpdk/encap.hpp"
#include "metaroce/wire/codec.hpp"

namespace {

using namespace metaroce;

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

std::string hex(uint64_t v, int width)
{
    char b[24];
    std::snprintf(b, sizeof b, "0x%0*" PRIx64, width, v);
    return b;
}

unsigned sack_count(const wire::ack_header& a)
{
    unsigned n = 0;
    for (uint8_t byte : a.sack) {
        n += unsigned(__builtin_popcount(byte));
    }
    return n;
}

void print(const wire::packet_view& v)
{
    // FIELDS: opcode dst_conn psn path msn offset msg_len rx_pkts ce_pkts sack_count
    //         nak_reason src_conn token
    std::string msn, offset, msg_len, rx, ce, sacks, reason, src_conn, token;
    const wire::opcode_info& oi = wire::info(v.op);
    if (oi.has_msg) {
        msn = std::to_string(v.msn);
        offset = std::to_string(v.offset);
        msg_len = std::to_string(v.msg_len);
    }
    if (v.ack != nullptr) {
        rx = std::to_string(v.ack->rx_pkts.host());
        ce = std::to_string(v.ack->ce_pkts.host());
        sacks = std::to_string(sack_count(*v.ack));
    }
    if (v.nak != nullptr) {
        reason = std::to_string(int(v.nak->reason));
        msn = std::to_string(v.nak->msn.host());
    }
    if (v.hello != nullptr) {
        src_conn = hex(v.hello->src_conn.host(), 8);
    }
    if (v.close != nullptr) {
        src_conn = hex(v.close->src_conn.host(), 8);
        token = hex(v.close->token.host(), 8);
    }
    if (v.probe != nullptr) {
        token = hex(v.probe->token.host(), 8);
    }
    std::printf("%s\t%s\t%u\t%u\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", hex(uint8_t(v.op), 2).c_str(),
                hex(v.dst_conn, 8).c_str(), v.psn, unsigned(v.path), msn.c_str(), offset.c_str(),
                msg_len.c_str(), rx.c_str(), ce.c_str(), sacks.c_str(), reason.c_str(), src_conn.c_str(),
                token.c_str());
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CAPTURE.pcap (classic pcap, Ethernet)\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (file.size() < 24 || (le32(file.data()) != 0xa1b2c3d4 && le32(file.data()) != 0xa1b23c4d) ||
        le32(file.data() + 20) != 1) {
        std::fprintf(stderr, "%s: not a little-endian classic pcap of Ethernet frames\n", argv[1]);
        return 2;
    }
    size_t at = 24;
    while (at + 16 <= file.size()) {
        const uint32_t caplen = le32(file.data() + at + 8);
        const uint32_t origlen = le32(file.data() + at + 12);
        at += 16;
        if (at + caplen > file.size()) {
            break;
        }
        const std::span<const uint8_t> frame(file.data() + at, caplen);
        at += caplen;
        if (caplen != origlen) {
            continue; // truncated by the snapshot length: not comparable
        }
        const dpdk::rx_result fr = dpdk::parse_frame(frame, wire::k_udp_dst_port, dpdk::rx_csum_state{true, true});
        if (fr.drop != dpdk::rx_drop::none) {
            continue;
        }
        const wire::parse_result pr = wire::parse(fr.pkt.payload);
        if (pr.ok()) {
            print(pr.pkt);
        } else {
            std::printf("malformed\t%s\n", std::string(wire::to_string(pr.error)).c_str());
        }
    }
    return 0;
}
