// The UDP backend in one process: two nodes on distinct loopback addresses, real
// sockets, data verified where it lands.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <stdexcept>
#include <string>

#include "metaroce/wire/headers.hpp"
#include "udp_test_util.hpp"

using namespace metaroce;
using namespace metaroce::udp;
using namespace metaroce::udp::test;

namespace {

struct pair {
    node a;
    node b;
    sink sa, sb;
    conn_id ca = k_no_conn;
    conn_id cb = k_no_conn;

    pair(const node_params& pa, const node_params& pb) : a(pa), b(pb)
    {
        ca = a.ep().connect(pb.plane_addrs[0], node::now_ns());
        REQUIRE(ca != k_no_conn);
        REQUIRE(run([&] { return established(a.ep(), ca) && sb.incoming() != k_no_conn; }));
        cb = sb.incoming();
    }
    static bool established(endpoint& e, conn_id c)
    {
        const auto i = e.inspect(c);
        return i && i->state == conn_state::established;
    }
    bool run(const std::function<bool()>& done)
    {
        return drive({&a, &b}, [&] {
            sa.drain(a.ep());
            sb.drain(b.ep());
            return done();
        });
    }
    size_t ok_count(const sink& s, wc_opcode op) const
    {
        size_t n = 0;
        for (const auto& c : s.cq) {
            n += c.op == op && c.status == wc_status::success;
        }
        return n;
    }
};

send_wr write_wr(uint64_t id, const region& src, size_t off, uint32_t len, const region& dst, size_t doff)
{
    send_wr wr;
    wr.wr_id = id;
    wr.op = wr_opcode::write;
    wr.local = sge{src.mr.va + off, len, src.mr.lkey};
    wr.remote_va = dst.mr.va + doff;
    wr.rkey = dst.mr.rkey;
    return wr;
}

// WRITE of `total` bytes in 1 MiB messages, verified at the target.
void write_and_verify(pair& p, size_t total)
{
    region src(p.a.ep(), total, 7);
    region dst(p.b.ep(), total, 0);
    constexpr size_t k_msg = 1 << 20;
    size_t posted = 0;
    for (size_t off = 0; off < total; off += k_msg) {
        const uint32_t len = uint32_t(std::min(k_msg, total - off));
        REQUIRE(p.a.ep().post_send(p.ca, write_wr(off, src, off, len, dst, off), node::now_ns()) ==
                post_result::ok);
        ++posted;
    }
    REQUIRE(p.run([&] { return p.sa.cq.size() >= posted; }));
    CHECK(p.ok_count(p.sa, wc_opcode::write) == posted);
    CHECK(dst.differ(0, total, 7) == 0);
}

} // namespace

TEST_CASE("UDP: WRITE, SEND and READ between two loopback nodes, bytes verified", "[udp]")
{
    pair p(params({lo(77, 1, 1)}), params({lo(77, 1, 2)}));
    SECTION("WRITE 8 MiB")
    {
        write_and_verify(p, 8 << 20);
        // Runs of full packets leave in one UDP_SEGMENT send and arrive coalesced (GRO).
        CHECK(p.a.counters().tx_gso_sends > 0);
        CHECK(p.b.counters().rx_gro_runs > 0);
    }
    SECTION("SEND into posted receives")
    {
        constexpr uint32_t k_len = 200'000; // 49 packets
        region src(p.a.ep(), 2 * k_len, 9);
        region dst(p.b.ep(), 2 * k_len, 0);
        for (uint32_t i = 0; i < 2; ++i) {
            recv_wr r;
            r.wr_id = 100 + i;
            r.local = sge{dst.mr.va + i * k_len, k_len, dst.mr.lkey};
            REQUIRE(p.b.ep().post_recv(p.cb, 0, r) == post_result::ok);
        }
        for (uint32_t i = 0; i < 2; ++i) {
            send_wr s;
            s.wr_id = i;
            s.op = i == 0 ? wr_opcode::send : wr_opcode::send_imm;
            s.imm = 0xabcd;
            s.local = sge{src.mr.va + i * k_len, k_len, src.mr.lkey};
            REQUIRE(p.a.ep().post_send(p.ca, s, node::now_ns()) == post_result::ok);
        }
        REQUIRE(p.run([&] { return p.sb.cq.size() >= 2 && p.sa.cq.size() >= 2; }));
        REQUIRE(p.ok_count(p.sb, wc_opcode::recv) == 2);
        CHECK(p.sb.cq[0].byte_len == k_len);
        CHECK_FALSE(p.sb.cq[0].has_imm);
        CHECK(p.sb.cq[1].has_imm);
        CHECK(p.sb.cq[1].imm == 0xabcd);
        CHECK(dst.differ(0, 2 * k_len, 9) == 0);
    }
    SECTION("READ 2 MiB")
    {
        constexpr uint32_t k_len = 2 << 20;
        region local(p.a.ep(), k_len, 0);
        region remote(p.b.ep(), k_len, 5);
        send_wr r;
        r.wr_id = 1;
        r.op = wr_opcode::read;
        r.local = sge{local.mr.va, k_len, local.mr.lkey};
        r.remote_va = remote.mr.va;
        r.rkey = remote.mr.rkey;
        REQUIRE(p.a.ep().post_send(p.ca, r, node::now_ns()) == post_result::ok);
        REQUIRE(p.run([&] { return !p.sa.cq.empty(); }));
        CHECK(p.ok_count(p.sa, wc_opcode::read) == 1);
        CHECK(local.differ(0, k_len, 5) == 0);
    }
    CHECK(p.a.counters().rx_malformed == 0);
    CHECK(p.a.counters().tx_errors == 0);
    CHECK(p.b.counters().rx_datagrams > 0);
}

TEST_CASE("UDP: two planes on 127.0.0.x pairs carry a verified WRITE", "[udp][planes]")
{
    // Peers laid out like us: 127.77.2.1/127.77.2.3 talks to 127.77.2.2/127.77.2.4.
    pair p(params({lo(77, 2, 1), lo(77, 2, 3)}), params({lo(77, 2, 2), lo(77, 2, 4)}));
    write_and_verify(p, 8 << 20);
    for (node* n : {&p.a, &p.b}) {
        CHECK(n->counters().rx_plane_datagrams[0] > 0);
        CHECK(n->counters().rx_plane_datagrams[1] > 0);
    }
}

TEST_CASE("UDP: 1% injected loss on receive, transfers still complete and verify", "[udp][loss]")
{
    node_params pa = params({lo(77, 3, 1)});
    node_params pb = params({lo(77, 3, 2)});
    pa.test_drop_rate = pb.test_drop_rate = 0.01;
    pa.gso = pa.gro = false; // and the one-datagram-per-syscall paths
    pb.gso = pb.gro = false;
    pa.test_drop_seed = 3;
    pb.test_drop_seed = 4;
    pair p(pa, pb);
    write_and_verify(p, 16 << 20);
    CHECK(p.b.counters().rx_injected_drops > 20);
    CHECK(p.a.counters().tx_gso_sends == 0);
    CHECK(p.b.counters().rx_gro_runs == 0);
    CHECK(p.a.ep().stats().retransmits > 0);
}

TEST_CASE("UDP: malformed datagrams are counted and dropped", "[udp][malformed]")
{
    node n(params({lo(77, 4, 1)}));
    const int s = socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(s >= 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(4796);
    to.sin_addr.s_addr = htonl(lo(77, 4, 1));
    const uint8_t tiny[3] = {1, 2, 3};
    REQUIRE(sendto(s, tiny, sizeof tiny, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == 3);
    std::vector<uint8_t> junk(64, 0xee);
    REQUIRE(sendto(s, junk.data(), junk.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == 64);
    std::vector<uint8_t> huge(20000, 0x11); // beyond any packet: truncated on receive
    REQUIRE(sendto(s, huge.data(), huge.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) ==
            ssize_t(huge.size()));
    close(s);
    REQUIRE(drive({&n}, [&] {
        return n.counters().rx_malformed + n.counters().rx_datagrams >= 3;
    }, std::chrono::milliseconds(2000)));
    CHECK(n.counters().rx_malformed == 1);   // the oversized one, truncated on receive
    CHECK(n.counters().rx_datagrams == 2);   // the short one and the junk reached the core...
    CHECK(n.ep().stats().rx_malformed_total() == 2); // ...which refused both
}

TEST_CASE("UDP: sends ECT(0) from the path's source port; reads CE back", "[udp][ecn]")
{
    // A plain socket plays the peer: it sees what node A puts on the wire.
    const uint32_t peer = lo(77, 5, 2);
    const int s = socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(s >= 0);
    const int on = 1;
    REQUIRE(setsockopt(s, IPPROTO_IP, IP_RECVTOS, &on, sizeof on) == 0);
    sockaddr_in me{};
    me.sin_family = AF_INET;
    me.sin_port = htons(4796);
    me.sin_addr.s_addr = htonl(peer);
    REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&me), sizeof me) == 0);

    node_params pa = params({lo(77, 5, 1)});
    pa.sport_slots = 1; // every path from 49152 (or the next free port 49153...)
    node a(pa);
    REQUIRE(a.ep().connect(peer, node::now_ns()) != k_no_conn);
    a.poll(node::now_ns()); // sends the HELLO
    uint8_t buf[2048];
    char ctrl[64];
    sockaddr_in from{};
    iovec iov{buf, sizeof buf};
    msghdr h{};
    h.msg_name = &from;
    h.msg_namelen = sizeof from;
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = ctrl;
    h.msg_controllen = sizeof ctrl;
    const ssize_t n = recvmsg(s, &h, 0);
    REQUIRE(n > 0);
    uint8_t tos = 0xff;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
            tos = *CMSG_DATA(c);
        }
    }
    CHECK((tos & 3) == 2); // ECT(0)
    CHECK(ntohl(from.sin_addr.s_addr) == lo(77, 5, 1));
    const uint16_t sport = ntohs(from.sin_port);
    CHECK(sport >= wire::k_udp_sport_min);
    if (a.counters().sport_moved == 0) {
        CHECK(sport == wire::k_udp_sport_min);
    }

    // CE on arrival is reported per datagram.
    const int tos_ce = 0x03;
    REQUIRE(setsockopt(s, IPPROTO_IP, IP_TOS, &tos_ce, sizeof tos_ce) == 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(4796);
    to.sin_addr.s_addr = htonl(lo(77, 5, 1));
    REQUIRE(sendto(s, buf, size_t(n), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == n);
    REQUIRE(drive({&a}, [&] { return a.counters().rx_datagrams >= 1; }, std::chrono::milliseconds(2000)));
    CHECK(a.counters().rx_ce == 1);
    close(s);
}

TEST_CASE("UDP: a taken address is refused with a precise message", "[udp][errors]")
{
    node a(params({lo(77, 6, 1)}));
    try {
        node b(params({lo(77, 6, 1)}));
        FAIL("a second node bound the same address");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "127.77.6.1:4796 is in use by another process");
    }
    // Another address on the same port is fine (two processes on one machine).
    node c(params({lo(77, 6, 2)}));
    CHECK(c.wait_fd() >= 0);
}
