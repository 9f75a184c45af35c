// The implementation under test (IUT) as the conformance runner sees it: a node that
// exchanges transport packets with the tester, plus a small "application control"
// part that does what a real application would (register memory, post work requests,
// read completions). Another implementation joins the runner by implementing this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metaroce/verbs_types.hpp"

namespace metaroce::conformance {

// Node addresses (plane-0 IPv4, host order) the runner uses.
inline constexpr uint32_t k_iut_addr = 0x0a000001;    // 10.0.0.1
inline constexpr uint32_t k_tester_addr = 0x0a000002; // 10.0.0.2
inline constexpr uint32_t k_other_addr = 0x0a000003;  // 10.0.0.3: a node with no connection

// One transport packet (the UDP payload) and how it travels.
struct datagram {
    std::vector<uint8_t> bytes;
    uint32_t src_addr = k_tester_addr;
    uint32_t dst_addr = k_iut_addr;
    uint8_t plane = 0;
    uint16_t udp_sport = 49152;
    bool ce = false;             // tester -> IUT: arrives CE-marked
    bool ect = true;             // IUT -> tester: was sent ECN-capable
    uint64_t at_ns = 0;          // IUT -> tester: target clock at arrival
    std::vector<uint8_t> frame;  // IUT -> tester, framed targets: the whole Ethernet frame
};

struct target_caps {
    bool virtual_time = false;   // the clock is simulated: timing rules are checked exactly
    bool frames = false;         // real Ethernet/IPv4/UDP frames (spec 2)
    uint8_t planes = 1;          // planes (ports) the IUT has
    bool counters = false;       // counter() answers
    bool rate_hints = false;     // the IUT has an inbound capacity configured (spec 6.4)
    bool plane_admin = false;    // set_plane() works
    bool sge_lists = false;      // post_recv_list() works (spec 4.5)
};

// A registered region of the IUT.
struct region {
    uint64_t va = 0;
    uint64_t len = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
};

struct send_req {
    wr_opcode op = wr_opcode::write;
    uint16_t stream = 0;
    region local;
    uint64_t offset = 0;       // into `local`
    uint32_t length = 0;
    uint64_t remote_va = 0;
    uint32_t rkey = 0;
    uint32_t imm = 0;
    uint64_t wr_id = 0;
    bool signaled = true;
};

class target {
public:
    virtual ~target() = default;
    virtual std::string name() const = 0;
    virtual const target_caps& caps() const = 0;
    // Called before every test: a target may start from a fresh node.
    virtual void begin_test() {}
    virtual void end_test() {}

    // --- packets -------------------------------------------------------------
    virtual void send(const datagram& d) = 0;
    // A raw Ethernet frame (caps().frames only).
    virtual void send_frame(std::span<const uint8_t> frame) { (void)frame; }
    // Next packet the IUT sent, waiting at most timeout_ns of target time.
    virtual bool recv(datagram& out, uint64_t timeout_ns) = 0;
    virtual uint64_t now_ns() = 0;
    // Frame fields the IUT uses (caps().frames only), for crafting frames by hand.
    virtual std::vector<uint8_t> iut_mac() { return {}; }
    virtual std::vector<uint8_t> tester_mac() { return {}; }

    // --- application control --------------------------------------------------
    virtual std::optional<region> reg_mr(uint64_t len, uint32_t access) = 0;
    // Deregisters; the memory stays readable through read_mem (to check nothing landed).
    virtual bool dereg_mr(const region& r) { (void)r; return false; }
    virtual bool write_mem(const region& r, uint64_t off, std::span<const uint8_t> bytes) = 0;
    virtual std::vector<uint8_t> read_mem(const region& r, uint64_t off, uint64_t len) = 0;
    virtual post_result post_recv(conn_id c, uint16_t stream, const region& r, uint64_t off,
                                  uint32_t len, uint64_t wr_id) = 0;
    virtual post_result post_send(conn_id c, const send_req& s) = 0;
    // A receive scattered over pieces (region, offset, length) (caps().sge_lists only).
    virtual post_result post_recv_list(conn_id c, uint16_t stream, std::span<const sge> pieces, uint64_t wr_id)
    {
        (void)c, (void)stream, (void)pieces, (void)wr_id;
        return post_result::too_many_sge;
    }
    virtual std::vector<completion> poll_cq() = 0;
    // Starts a connection to `peer` (the handshake runs on the wire); k_no_conn if refused.
    virtual conn_id connect(uint32_t peer) = 0;
    virtual void close(conn_id c) = 0;
    // nullopt: no such connection (never existed or freed).
    virtual std::optional<conn_state> state(conn_id c) = 0;
    // Transport counters by name (metaroce's counters: rx_duplicates, rx_malformed.too_short...).
    virtual std::optional<uint64_t> counter(std::string_view name) { (void)name; return std::nullopt; }
    virtual bool set_plane(uint8_t plane, bool up) { (void)plane; (void)up; return false; }
    // Restarts the node as its driver would start it (a fresh process); false if the
    // target cannot.
    virtual bool restart_node() { return false; }
};

std::unique_ptr<target> make_core_target();

struct dpdk_options {
    std::string app;       // path of the metaroce app
    bool verbose = false;  // echo the app's output
    bool udp_backend = false; // the app on --backend udp (make_udp_target)
};
// Throws std::runtime_error when the environment cannot be set up.
std::unique_ptr<target> make_dpdk_target(const dpdk_options& o);
// The same app on --backend udp: kernel sockets on the veth end's address, the tester
// still on AF_PACKET at the other end (a UDP socket could not choose the source port
// per packet nor set CE). Reported frameless: the kernel builds the frames.
std::unique_ptr<target> make_udp_target(const dpdk_options& o);

} // namespace metaroce::conformance
