// Encapsulation (spec 2) with hand-made frames on framed targets, and the audits: the
// format rules every packet the IUT sent during the whole run must follow (spec 2,
// 3.0-3.9), checked by the tester as the packets arrived.
#include <cstring>
#include <functional>

#include "dpdk/encap.hpp"
#include "helpers.hpp"

namespace metaroce::conformance {

namespace {

// The Ethernet frame the dpdk target would send for `bytes`, to be broken on purpose.
std::vector<uint8_t> frame_of(ctx& x, const std::vector<uint8_t>& bytes, uint16_t sport)
{
    std::vector<uint8_t> f(dpdk::k_frame_overhead + bytes.size());
    std::memcpy(f.data() + dpdk::k_frame_overhead, bytes.data(), bytes.size());
    dpdk::tx_addressing a;
    const auto src = x.t.tester_mac(), dst = x.t.iut_mac();
    std::memcpy(a.src_mac.bytes.data(), src.data(), 6);
    std::memcpy(a.dst_mac.bytes.data(), dst.data(), 6);
    a.src_ip = k_tester_addr;
    a.dst_ip = k_iut_addr;
    a.udp_sport = sport;
    a.udp_dport = wire::k_udp_dst_port;
    dpdk::tx_csum_mode csum;
    csum.udp_software = true;
    dpdk::write_headers(f.data(), a, bytes.size(), csum);
    return f;
}

dpdk::frame_headers& hdr(std::vector<uint8_t>& f)
{
    return *reinterpret_cast<dpdk::frame_headers*>(f.data());
}

void fix_ip_checksum(std::vector<uint8_t>& f)
{
    hdr(f).ip.checksum = wire::be16_t::from_host(dpdk::ipv4_header_checksum(hdr(f).ip));
}

// As in the parse tests: the broken frame is ignored, the clean packet then accepted.
void frame_rejected(ctx& x, const std::function<void(std::vector<uint8_t>&)>& mangle, const char* what)
{
    if (!x.t.caps().frames) {
        x.na("the target exchanges transport packets, not frames");
    }
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> data = pattern(64, 0x41);
    const sent_msg s = write_msg(x.p, c, r, 0, data);
    std::vector<uint8_t> f = frame_of(x, s.pkts[0].bytes, c.sport(0));
    mangle(f);
    x.t.send_frame(f);
    const auto got = x.p.collect(tester::reply_for(c), x.p.quiet_ns());
    x.check(got.empty(), std::string("a frame with ") + what + " was answered (" + describe(got) + ")");
    x.check(all_zero(x.mem(r, 0, 64)), std::string("a frame with ") + what + " was placed");
    x.p.send_pkt(c, s.pkts[0]);
    const rx_pkt a = expect_ack(x, c, 0, s.pkts[0].psn + 1, "for the clean frame under the same PSN");
    x.check(a.v().ack->rx_pkts.host() == 1, std::string("the frame with ") + what + " took the PSN");
}

void frame_accepted(ctx& x, const std::function<void(std::vector<uint8_t>&)>& mangle, const char* what)
{
    if (!x.t.caps().frames) {
        x.na("the target exchanges transport packets, not frames");
    }
    tconn& c = x.p.connect();
    const region r = x.rw_mr(4096);
    const std::vector<uint8_t> data = pattern(64, 0x42);
    const sent_msg s = write_msg(x.p, c, r, 0, data);
    std::vector<uint8_t> f = frame_of(x, s.pkts[0].bytes, c.sport(0));
    mangle(f);
    x.t.send_frame(f);
    expect_ack(x, c, 0, s.pkts[0].psn + 1, std::string("for a frame with ") + what);
    x.check(x.mem(r, 0, 64) == data, std::string("a frame with ") + what + " did not land");
}

// Fails with the first violations of the given rules seen in the run.
void audit(ctx& x, std::initializer_list<const char*> rules)
{
    uint64_t seen = 0;
    for (const char* r : rules) {
        seen += x.p.checked.count(r) ? x.p.checked.at(r) : 0;
    }
    if (seen == 0) {
        x.na("no packet of this kind was seen on this target");
    }
    std::string bad;
    size_t n = 0;
    for (const auto& v : x.p.violations) {
        for (const char* r : rules) {
            if (v.rule == r && n++ < 3) {
                bad += (bad.empty() ? "" : "; ") + std::string("spec ") + r + ": " + v.what;
            }
        }
    }
    x.check(n == 0, std::to_string(n) + " violation(s) in the IUT's packets: " + bad);
}

} // namespace

CONFORMANCE_TEST(frame_with_bad_ip_checksum_dropped, "2.5")
{
    frame_rejected(x, [](std::vector<uint8_t>& f) { hdr(f).ip.checksum = wire::be16_t::from_host(hdr(f).ip.checksum.host() ^ 0x0101); },
                   "a wrong IPv4 checksum");
}

CONFORMANCE_TEST(frame_with_bad_udp_checksum_dropped, "2.5")
{
    frame_rejected(x, [](std::vector<uint8_t>& f) { f[dpdk::k_frame_overhead + 30] ^= 0x55; }, "a wrong UDP checksum");
}

CONFORMANCE_TEST(frame_without_udp_checksum_accepted, "2.5")
{
    frame_accepted(x, [](std::vector<uint8_t>& f) { hdr(f).udp.checksum = wire::be16_t::from_host(0); },
                   "no UDP checksum (0, legal over IPv4)");
}

CONFORMANCE_TEST(frame_to_another_udp_port_ignored, "2.2", "2.5")
{
    frame_rejected(x, [](std::vector<uint8_t>& f) { hdr(f).udp.dst_port = wire::be16_t::from_host(4791); },
                   "UDP destination port 4791");
}

CONFORMANCE_TEST(ip_fragment_ignored, "2.5")
{
    frame_rejected(x,
                   [](std::vector<uint8_t>& f) {
                       hdr(f).ip.fragment_offset = wire::be16_t::from_host(0x2000); // more fragments
                       fix_ip_checksum(f);
                   },
                   "the IPv4 more-fragments flag");
}

CONFORMANCE_TEST(frame_not_ipv4_ignored, "2.1", "2.5")
{
    frame_rejected(x, [](std::vector<uint8_t>& f) { hdr(f).eth.ether_type = wire::be16_t::from_host(0x86dd); },
                   "EtherType 0x86dd");
}

CONFORMANCE_TEST(frame_padding_after_udp_ignored, "2.6")
{
    // Ethernet may pad a frame: the transport packet is what the UDP length says.
    frame_accepted(x, [](std::vector<uint8_t>& f) { f.insert(f.end(), {0xde, 0xad, 0xbe, 0xef, 0, 0}); },
                   "6 bytes of padding after the UDP datagram");
}

CONFORMANCE_AUDIT(iut_frames_are_ethernet_ipv4_udp, "2.1", "2.2")
{
    audit(x, {"2.1", "2.2"});
}

CONFORMANCE_AUDIT(iut_frames_checksums_and_lengths, "2.5", "2.6")
{
    audit(x, {"2.5", "2.6"});
}

CONFORMANCE_AUDIT(iut_udp_source_ports_in_range, "2.3")
{
    audit(x, {"2.3"});
}

CONFORMANCE_AUDIT(iut_packets_ecn_capable, "2.4")
{
    audit(x, {"2.4"});
}

CONFORMANCE_AUDIT(iut_packets_bth_and_sizes, "3.0", "3.1")
{
    audit(x, {"3.0", "3.1"});
}

CONFORMANCE_AUDIT(iut_data_headers, "3.2", "3.3", "3.5")
{
    audit(x, {"3.2", "3.3", "3.5"});
}

CONFORMANCE_AUDIT(iut_ack_and_nak_headers, "3.6", "3.7")
{
    audit(x, {"3.6", "3.7"});
}

CONFORMANCE_AUDIT(iut_hello_and_close_headers, "3.8", "3.9")
{
    audit(x, {"3.8", "3.9"});
}

} // namespace metaroce::conformance
