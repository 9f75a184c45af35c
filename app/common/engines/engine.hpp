// A test engine, in the spirit of testpmd's struct fwd_engine: one of the five tests,
// on one side of it. It owns its state and never calls back into its host: the host
// polls the endpoint and hands it time and its completions (wr_kind active_* or
// passive_*), then reads idle(), finished() and result().
//
//   host: start(setup) -> { pump(now); on_completion(c, now) }* -> stop() -> idle()
//         -> verify() -> result()
//
// Both programs host the same engines: metaroce-perf one per size (its client active,
// its server passive), the metaroce app one per connection and side (any node can
// drive a test while it serves its peers' tests).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/test_kind.hpp"
#include "engines/wr_tag.hpp"
#include "metaroce/endpoint.hpp"

namespace metaroce::engines {

enum class role : uint8_t { active, passive };

inline constexpr uint64_t k_forever = UINT64_MAX;

// What an engine works on. The host keeps the endpoint and the memory alive.
struct engine_setup {
    endpoint* ep = nullptr;
    std::vector<conn_id> conns;  // latency tests use the first
    memory_region area;          // the engine's, registered with every access right
    // Active: the peer's area. Passive: where echoes go.
    uint64_t remote_va = 0;
    uint32_t rkey = 0;
    uint64_t size = 0;           // message bytes
    uint32_t slots = 1;          // bandwidth: messages cycle through this many slots
    uint32_t depth = 1;          // active bandwidth: requests outstanding per connection
    uint64_t iters = k_forever;  // per connection
    uint64_t echo_offset = 0;    // active latency: where echoes land in the area
    uint32_t recv_window = 256;  // passive: receives kept posted per connection
    bool keep_samples = true;    // latency: every sample, or only their summary
};

// A setup over `area` for these connections, receives windowed at the endpoint's
// rq_depth; the host fills in the test's parameters.
engine_setup setup_over(endpoint& ep, std::vector<conn_id> conns, const memory_region& area);

struct latency_summary {
    uint64_t count = 0;
    double min_us = 0;
    double max_us = 0;
    double sum_us = 0;
    std::vector<double> samples; // when keep_samples
    void add(double us, bool keep);
};

struct engine_result {
    uint64_t iterations = 0;  // requests completed (active) or served (passive)
    uint64_t bytes = 0;
    uint64_t errors = 0;      // completions in error
    uint64_t bad_bytes = 0;   // verify(): bytes that differ from the pattern
    uint64_t bad_lengths = 0; // receives that were not one message long
    bool checked = false;     // verify() compared bytes on this side
    latency_summary latency;  // active latency tests: half round trips
};

class engine {
public:
    engine(test_kind t, role r) noexcept : kind_(t), role_(r) {}
    virtual ~engine() = default;
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    test_kind kind() const noexcept { return kind_; }
    role side() const noexcept { return role_; }

    // Prepares the area (pattern or zeros) and posts the first receives; failure()
    // says why it could not.
    void start(const engine_setup& s);
    // Posts what the test allows now; latency tests also notice echoes that landed.
    virtual void pump(uint64_t now_ns) = 0;
    void on_completion(const completion& c, uint64_t now_ns);
    // No new iteration from now on (active: requests, passive: receives).
    void stop() noexcept;
    // The peer's `more`: n more iterations on connection `index` (active).
    void extend(size_t index, uint64_t n) noexcept;
    // Nothing this engine posted is outstanding (receives a passive side keeps for its
    // peer aside).
    virtual bool idle() const noexcept;
    // Active: every iteration allowed was posted and completed.
    bool finished() const noexcept;
    // Passive: per connection, receives posted that no request has used yet.
    std::vector<uint64_t> unused_receives() const;
    // Iterations of the busiest connection.
    uint64_t busiest() const noexcept;
    // Compares the bytes the test left in the area with the pattern; peer_busiest is
    // the other side's busiest() (which slots it wrote).
    void verify(uint64_t peer_busiest);
    const engine_result& result() const noexcept { return result_; }
    // Set when the endpoint refused a post: the run cannot go on.
    const std::string& failure() const noexcept { return failure_; }

protected:
    // Readies the area for the test; false after fail().
    virtual bool prepare() = 0;
    virtual void on_send_done(size_t ci, uint64_t seq, const completion& c, uint64_t now_ns);
    virtual void on_recv_done(size_t ci, uint64_t seq, const completion& c, uint64_t now_ns);
    virtual void check(uint64_t peer_busiest);

    // A request on connection ci: size bytes from area + local_off; a WRITE or READ
    // also names the remote address remote_off after setup.remote_va.
    post_result post(size_t ci, wr_opcode op, uint64_t local_off, uint64_t remote_off, uint64_t seq,
                     uint16_t stream, uint64_t now_ns);
    post_result post_receive(size_t ci, uint64_t local_off, uint64_t seq, uint16_t stream);
    // Posts receives (area slots) up to the window and setup.iters.
    void keep_receives(uint16_t stream);
    // Adds the mismatches of area[off, off + len) with the pattern from `from`.
    void compare(uint64_t off, uint64_t len, uint64_t from);
    // True when r is ok; else records a failure, except for queue_full (retried later).
    bool posted_ok(post_result r, const char* what);
    bool may_post(size_t ci) const noexcept { return posted_[ci] < limit_[ci]; }
    bool fail(std::string why);
    bool fits(uint64_t end) const noexcept { return s_.size != 0 && end <= s_.area.length; }
    // Bytes of the slots that `iterations` messages wrote (bandwidth tests).
    uint64_t slot_bytes(uint64_t iterations) const noexcept
    {
        return (iterations < s_.slots ? iterations : s_.slots) * s_.size;
    }

    engine_setup s_;
    engine_result result_;
    std::vector<uint64_t> posted_;      // requests, per connection
    std::vector<uint64_t> completed_;
    std::vector<uint64_t> limit_;
    std::vector<uint64_t> recv_posted_;
    std::vector<uint64_t> recv_done_;
    bool stopped_ = false;

private:
    test_kind kind_;
    role role_;
    std::string failure_;
};

std::unique_ptr<engine> make_engine(test_kind t, role r);

} // namespace metaroce::engines
