// Two real endpoints joined in-process, with an established connection, guarded
// memory and work outstanding: the world fuzz_endpoint attacks and gen_corpus records.
// Everything is deterministic (fixed seeds, fixed virtual addresses), so packets the
// generator captures carry the ids, keys and PSNs the fuzz target will see.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "metaroce/endpoint.hpp"

namespace metaroce::fuzz {

// Reports a broken invariant and aborts, so libFuzzer keeps the input.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline constexpr uint32_t k_addr[2] = {0x0a000001, 0x0a000002};
inline constexpr uint64_t k_wire_delay_ns = 1000;

struct wire_pkt {
    uint64_t deliver_at = 0;
    int to = 0;
    rx_meta meta;
    std::vector<uint8_t> bytes;
};

// Regions of one side. Each sits between guard areas of its arena.
enum region_id : int { r_rw, r_ro, r_private, r_wo, r_small, r_recv, k_regions };
inline constexpr int k_recv_bufs = 8;

// The memory of one side: one arena holding every region and receive buffer between
// guards, and a shadow of what each byte must hold. Bytes may change only while the
// peer may write them: a live region with remote_write, a posted receive buffer or a
// READ destination until its completion was polled.
class side_memory {
public:
    side_memory(endpoint& e, int side);

    const memory_region& region(int r) const { return mr_[r]; }
    bool live(int r) const { return live_[r]; }
    // Receive buffer i: its va (inside r_recv) and length.
    uint64_t recv_va(int i) const;
    uint32_t recv_len() const;
    bool deregister(int r);

    // A local range of a posted READ or receive may change until wr_id completes.
    void open_range(uint64_t wr_id, uint64_t va, uint32_t len);
    void close_range(uint64_t wr_id);
    // Aborts if a byte changed that no one may write; then accepts what changed.
    void check(const char* when);
    // True if these bytes lie, as they are now, inside a live region the peer may read.
    bool peer_readable(std::span<const uint8_t> bytes) const;

private:
    size_t offset_of(uint64_t va) const;
    void rebuild_mask();

    endpoint& ep_;
    int side_;
    std::vector<uint8_t> bytes_, shadow_, writable_;
    size_t off_[k_regions] = {};
    memory_region mr_[k_regions] = {};
    bool live_[k_regions] = {};
    std::map<uint64_t, std::pair<size_t, size_t>> open_; // wr_id -> [begin, end) in arena
};

// Work a side posted and has not yet seen complete.
struct posted_wr {
    conn_id conn = k_no_conn;
    uint16_t stream = 0;
    bool recv = false;
    bool signaled = true;
    wr_opcode op = wr_opcode::write;
    uint32_t length = 0;
};

class world {
public:
    world();
    ~world();

    endpoint& ep(int s) { return *ep_[s]; }
    side_memory& mem(int s) { return *mem_[s]; }
    uint64_t now() const { return now_; }
    // The connection of side s the setup made (k_no_conn once it is gone).
    conn_id conn(int s) const;
    // Live connection ids of side s, oldest first.
    std::vector<conn_id> conns(int s) const { return ep_[s]->connections(); }

    // Lets both sides send; what they send goes on the wire.
    void pump();
    // Hands the first n wire packets over now. mode: 0 in order, 1 drop them,
    // 2 deliver each twice, 3 in reverse order.
    void deliver(size_t n, int mode);
    // Moves time forward by ns firing timers, with nothing delivered.
    void advance(uint64_t ns);
    // Moves time forward by ns as a fabric would: timers fire, packets arrive after
    // k_wire_delay_ns.
    void run(uint64_t ns);
    // A packet arrives at side `to` now.
    void inject(int to, const rx_meta& m, std::span<const uint8_t> bytes);

    post_result post_send(int s, conn_id c, const send_wr& wr);
    post_result post_recv(int s, conn_id c, uint16_t stream, const recv_wr& wr);
    // Polls up to max completions of side s and checks each against what was posted.
    std::vector<completion> poll_cq(int s, size_t max = SIZE_MAX);
    // Spec 7.4/7.5: once a connection is closing, closed or in error, every work request
    // posted on it has completed (an unsignaled send may have succeeded silently).
    // Polls both CQs empty first.
    void check_flushed();
    void close(int s, conn_id c);
    conn_id connect(int s);
    void set_plane(int s, uint8_t plane, bool up);
    bool deregister(int s, int region);
    void check_memory(const char* when);

    size_t wire_size() const { return wire_.size(); }
    uint64_t next_wr_id() { return ++wr_seq_; }
    // Every packet put on the wire (up to a cap), by receiving side: material for
    // structured mutations. Called for each packet sent, if set.
    std::vector<wire_pkt> sent[2];
    std::function<void(const wire_pkt&)> on_send;

private:
    void fire_timers(int s);
    void setup_transfer();
    void post_outstanding();
    bool settle(uint64_t max_ns, const std::function<bool()>& done);

    std::unique_ptr<endpoint> ep_[2];
    std::unique_ptr<side_memory> mem_[2];
    std::vector<wire_pkt> wire_;
    void check_completion(int s, const completion& c, const posted_wr& p);
    void check_read_resp(int s, std::span<const uint8_t> bytes);

    std::map<uint64_t, posted_wr> posted_[2];         // by wr_id, which grows with posting order
    std::set<std::pair<conn_id, uint16_t>> failed_[2]; // streams where a send request failed
    conn_id conn0_[2] = {k_no_conn, k_no_conn};
    uint64_t now_ = 1000;
    uint64_t wr_seq_ = 0;
};

// Config both sides use; small tables keep one execution cheap.
endpoint_config fuzz_config(int side);

} // namespace metaroce::fuzz
