// The tester: a packet-level MetaRoCE peer written against the public codec only. It
// runs the handshake itself, crafts data and control packets (well-formed or not),
// keeps its own model of what the IUT sent it, and answers the IUT's data with ACKs
// and its probes with PROBE_ACKs unless a test takes over.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/wire/codec.hpp"
#include "target.hpp"

namespace metaroce::conformance {

// A test that cannot go on: the runner prints it as FAIL with the message.
struct test_failure {
    std::string what;
};
// The rule cannot be exercised on this target: printed as N/A.
struct not_applicable {
    std::string why;
};

// One packet the IUT sent, parsed. Copies share the bytes, so views stay valid.
struct rx_pkt {
    std::shared_ptr<const datagram> d;
    wire::parse_result r;
    const wire::packet_view& v() const { return r.pkt; }
    bool ok() const { return r.ok(); }
    wire::opcode op() const { return r.pkt.op; }
    bool is(wire::opcode o) const { return r.ok() && r.pkt.op == o; }
    size_t len() const { return d->bytes.size(); }
    // ACK: is PSN cum+i marked received?
    bool sack_bit(uint32_t i) const;
};

// CONNECT/ACCEPT contents in host order.
struct hello_fields {
    uint64_t nonce = 0;
    uint32_t src_conn = 0;
    uint32_t isn = 0;
    uint16_t paths = 4;
    uint16_t mtu = 1024;
    uint16_t max_streams = 16;
    uint16_t max_msgs = 64;
    uint8_t planes = 1;
    uint16_t rq_depth = 256;
    uint64_t cookie = 0;
};
hello_fields decode_hello(const wire::hello_header& h);
wire::hello_header encode_hello(const hello_fields& f);

// What the tester offers in a handshake (the IUT may agree to less).
struct offer {
    uint16_t paths = 4;
    uint16_t mtu = 1024;
    uint16_t max_streams = 16;
    uint16_t max_msgs = 64;
    uint8_t planes = 1;
    std::optional<uint32_t> isn;
    std::optional<uint32_t> id;   // the tester's connection id (default: a fresh one)
};

// The tester's view of one IUT data path towards it: what it has received.
struct rx_path {
    uint32_t expected = 0;
    std::bitset<wire::k_sack_bits> bits; // bit i: PSN expected + i received
    uint32_t last_ts = 0;
    bool record(uint32_t psn); // false: duplicate or beyond the window
};

struct tconn {
    uint32_t id = 0;           // the tester's connection id
    uint32_t iut_id = 0;       // the IUT's
    uint32_t addr = k_tester_addr;
    bool tester_initiated = true;
    uint64_t nonce = 0;        // the connection's (the initiator's) nonce
    uint32_t isn = 0;          // first PSN of the tester's paths
    uint32_t iut_isn = 0;
    hello_fields accept;       // the ACCEPT (as sent by whoever accepted)
    uint16_t paths = 0, mtu = 0, max_streams = 0, max_msgs = 0;
    uint8_t planes = 1;
    std::vector<uint32_t> next_psn;     // tester -> IUT, per path
    std::vector<rx_path> rx;            // IUT -> tester, per path
    uint32_t next_msn = 0;
    std::array<uint32_t, 256> next_ssn{};
    std::array<uint32_t, 256> next_recv_seq{};
    uint32_t rr = 0;                    // round robin over paths
    uint64_t cookie = 0;                // the cookie our last CONNECT carried
    bool auto_ack = true;               // ACK every IUT data packet at once
    bool auto_control = true;           // answer the IUT's PROBEs and CLOSEs
    bool open = true;

    uint32_t token() const { return uint32_t(nonce); }
    uint16_t sport(uint8_t path) const
    {
        return uint16_t(wire::k_udp_sport_min + (id * 131u + path * 7u) % wire::k_udp_sport_span);
    }
};

// One packet of a message the tester sends.
struct out_pkt {
    std::vector<uint8_t> bytes;
    uint8_t path = 0;
    uint32_t psn = 0;
};

struct msg_spec {
    wire::opcode op = wire::opcode::write;
    uint16_t stream = 2;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;
    std::vector<uint8_t> payload;  // the whole message (READ_REQ: none)
    uint32_t read_len = 0;         // READ_REQ: msg_len
    int path = -1;                 // -1: round robin
    std::optional<uint32_t> msn, ssn, recv_seq;
};

struct sent_msg {
    uint32_t msn = 0, ssn = 0, recv_seq = 0;
    std::vector<out_pkt> pkts;
};

struct tx_opts {
    uint32_t src_addr = k_tester_addr;
    uint8_t plane = 0;
    uint16_t udp_sport = 0;  // 0: the path's
    bool ce = false;
};

using pkt_pred = std::function<bool(const rx_pkt&)>;

class tester {
public:
    tester(target& t, uint64_t time_scale);

    target& t;
    const uint64_t scale;  // dilates waits on real-time targets

    // Default waits: a reply that should come, and a window in which nothing should.
    uint64_t reply_ns() const { return 5'000'000 * scale; }
    uint64_t quiet_ns() const { return 1'000'000 * scale; }
    // What a sender puts on the wire at once, before its timers (RTO, tail-loss probe)
    // can fire: a virtual clock sends it all at one instant, a real one within ~1 ms.
    uint64_t burst_ns() const { return scale == 1 ? 20'000 : 5'000'000; }
    uint64_t burst_gap_ns() const { return scale == 1 ? 0 : 1'000'000; }

    // --- connections -----------------------------------------------------------
    // Tester-initiated handshake (COOKIE round included). Throws test_failure.
    tconn& connect(const offer& o = {});
    // Answers a CONNECT the IUT sends (after target::connect), cookie round included.
    tconn& accept(const offer& o = {});
    // The two halves of accept(): the CONNECT (cookie round done) and the ACCEPT.
    struct incoming {
        hello_fields hello;  // of the CONNECT that carried our cookie
        uint8_t plane = 0;
        uint16_t udp_sport = 0;
    };
    incoming wait_connect();
    tconn& send_accept(const incoming& in, const offer& o = {});
    // CLOSE, waits for CLOSE_ACK; the connection is forgotten either way.
    void close(tconn& c);
    void close_all();
    // Stops auto-ACKs on a connection after letting what is in flight settle.
    void manual_acks(tconn& c);

    uint32_t new_conn_id();
    uint64_t new_nonce();

    // --- building --------------------------------------------------------------
    std::vector<uint8_t> bth_only(const wire::bth_fields& b, size_t body_len);
    std::vector<uint8_t> hello_pkt(wire::opcode op, uint32_t dst_conn, const hello_fields& h);
    std::vector<uint8_t> data_pkt(const wire::bth_fields& b, const wire::msg_fields& m,
                                  std::span<const uint8_t> payload);
    std::vector<uint8_t> ack_pkt(const tconn& c, uint8_t path, uint32_t cum,
                                 const std::bitset<wire::k_sack_bits>& sack, uint32_t ts_echo,
                                 uint16_t rx_pkts, uint16_t ce_pkts, uint32_t hint = 0);
    std::vector<uint8_t> nak_pkt(const tconn& c, uint8_t path, uint32_t psn, wire::nak_reason r,
                                 uint16_t stream, uint32_t msn);
    std::vector<uint8_t> close_pkt(wire::opcode op, uint32_t dst_conn, uint32_t src_conn,
                                   uint32_t token);
    std::vector<uint8_t> probe_pkt(wire::opcode op, uint32_t dst_conn, uint8_t path,
                                   uint32_t token, uint32_t ts_echo);
    // Segments a message at the agreed mtu and numbers it (msn/ssn/recv_seq, PSNs).
    sent_msg build_message(tconn& c, const msg_spec& m);
    // Builds and sends every packet in order.
    sent_msg send_message(tconn& c, const msg_spec& m);
    // Next PSN on a path (taken).
    uint32_t take_psn(tconn& c, uint8_t path) { return c.next_psn[path]++; }
    uint32_t now32() { return uint32_t(t.now_ns()); }

    // --- sending ---------------------------------------------------------------
    void send(std::vector<uint8_t> bytes, const tx_opts& o);
    void send_on(tconn& c, std::vector<uint8_t> bytes, uint8_t path, bool ce = false);
    void send_pkt(tconn& c, const out_pkt& p, bool ce = false) { send_on(c, p.bytes, p.path, ce); }

    // --- receiving -------------------------------------------------------------
    // First matching packet within timeout (others are handled and kept in `seen`).
    std::optional<rx_pkt> expect(const pkt_pred& pred, uint64_t timeout_ns);
    rx_pkt must(const pkt_pred& pred, uint64_t timeout_ns, const std::string& what);
    // Every matching packet within the window.
    std::vector<rx_pkt> collect(const pkt_pred& pred, uint64_t window_ns);
    // True if nothing matching arrived within the window.
    bool quiet(const pkt_pred& pred, uint64_t window_ns) { return collect(pred, window_ns).empty(); }
    // Lets target time pass, handling what arrives.
    void idle(uint64_t ns) { collect([](const rx_pkt&) { return false; }, ns); }

    // Predicates for packets addressed to one of our connections.
    static pkt_pred op_for(const tconn& c, wire::opcode op);
    static pkt_pred ack_for(const tconn& c, int path = -1);
    static pkt_pred nak_for(const tconn& c);
    static pkt_pred data_for(const tconn& c, int stream = -1);
    static pkt_pred reply_for(const tconn& c); // ACK or NAK

    tconn* find(uint32_t id);
    std::map<uint32_t, std::unique_ptr<tconn>> conns;

    // Everything the IUT sent that breaks a packet-format rule, with the rule (spec 2.x/3.x).
    struct violation {
        std::string rule;
        std::string what;
    };
    std::vector<violation> violations;
    std::map<std::string, uint64_t> checked; // packets examined per rule

private:
    void handle(const rx_pkt& p);
    void audit(const rx_pkt& p);
    void auto_answer(tconn& c, const rx_pkt& p);
    tconn& finish_connect(const offer& o, tconn& c, const rx_pkt& accept);

    uint32_t next_id_ = 0x7e570001;
    uint64_t nonce_state_ = 0x243f6a8885a308d3ull;
};

std::string hex(std::span<const uint8_t> b, size_t max = 32);
std::vector<uint8_t> pattern(size_t n, uint8_t seed);

} // namespace metaroce::conformance
