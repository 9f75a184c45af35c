// Validation of endpoint configurations: every setting the engine would misbehave
// with (divide by zero, re-arm a timer at `now`, an empty window) is refused by name.
#include <sstream>

#include "metaroce/config.hpp"

namespace metaroce {

namespace {

class checker {
public:
    template <typename T>
    void require(bool ok, const char* field, const char* rule, T value)
    {
        if (!ok && first_.empty()) {
            std::ostringstream o;
            o << field << " = " << value << ": " << rule;
            first_ = o.str();
        }
    }
    std::string result() const { return first_; }

private:
    std::string first_;
};

} // namespace

std::string validate(const endpoint_config& c)
{
    checker k;
    const transport_config& t = c.transport;
    k.require(c.max_connections >= 1, "max_connections", "must be at least 1", c.max_connections);
    k.require(c.cq_depth >= 1, "cq_depth", "must be at least 1", c.cq_depth);
    // Pools index their chunks in 16 bits.
    auto chunks = [&k](uint32_t v, const char* field, const char* what) {
        k.require(v >= 1 && v <= 65535, field, (std::string("must be 1..65535 (") + what + ", 16-bit indexes)").c_str(), v);
    };
    chunks(c.record_chunks, "record_chunks", "chunks of 16 in-flight packet records");
    chunks(c.send_slot_chunks, "send_slot_chunks", "chunks of 16 send message slots");
    chunks(c.recv_slot_chunks, "recv_slot_chunks", "chunks of 16 receive message slots");
    chunks(c.send_log_chunks, "send_log_chunks", "chunks of 64 send log entries");
    chunks(c.read_job_chunks, "read_job_chunks", "chunks of 16 READ jobs");
    chunks(c.sack_blocks, "sack_blocks", "32-byte SACK bitmaps");
    chunks(c.ack_blocks, "ack_blocks", "12-byte blocks of an ACK owed");
    chunks(c.stream_blocks, "stream_blocks", "48-byte stream records");
    k.require(c.max_mrs >= 1, "max_mrs", "must be at least 1", c.max_mrs);
    k.require(c.hint_utilization > 0 && c.hint_utilization <= 1, "hint_utilization",
              "must be in (0, 1]", c.hint_utilization);
    k.require(c.inbound_capacity_mbps == 0 || c.rate_epoch_ns > 0, "rate_epoch_ns",
              "must be positive when rate hints are on", c.rate_epoch_ns);
    k.require(c.entropy_ports >= 1 && c.entropy_ports <= wire::k_udp_sport_span, "entropy_ports",
              "must be 1..16384", c.entropy_ports);
    k.require(t.mtu >= 64, "transport.mtu", "must be at least 64 bytes", t.mtu);
    k.require(t.paths >= 1 && t.paths <= wire::k_sack_bits, "transport.paths", "must be 1..256", t.paths);
    k.require(t.planes >= 1 && t.planes <= 32, "transport.planes", "must be 1..32", int(t.planes));
    k.require(t.max_streams >= 1, "transport.max_streams", "must be at least 1", t.max_streams);
    k.require(t.max_msgs >= 1, "transport.max_msgs", "must be at least 1", t.max_msgs);
    k.require(t.rq_depth >= 1, "transport.rq_depth", "must be at least 1", t.rq_depth);
    k.require(t.max_reads >= 1, "transport.max_reads", "must be at least 1", t.max_reads);
    k.require(t.ack_every_bytes >= 1, "transport.ack_every_bytes", "must be at least 1", t.ack_every_bytes);
    k.require(t.initial_rtt_ns > 0, "transport.initial_rtt_ns", "must be positive", t.initial_rtt_ns);
    k.require(t.min_rto_ns > 0, "transport.min_rto_ns", "must be positive", t.min_rto_ns);
    k.require(t.max_rto_ns >= t.min_rto_ns, "transport.max_rto_ns", "must be at least min_rto_ns",
              t.max_rto_ns);
    k.require(t.min_probe_ns <= t.max_rto_ns, "transport.min_probe_ns", "must be at most max_rto_ns",
              t.min_probe_ns);
    k.require(t.max_backoff_shift <= 20, "transport.max_backoff_shift", "must be at most 20",
              t.max_backoff_shift);
    k.require(t.reorder_steps_max >= 1 && t.reorder_steps_max <= 1024, "transport.reorder_steps_max",
              "must be 1..1024", t.reorder_steps_max);
    k.require(t.connect_retry_ns > 0, "transport.connect_retry_ns", "must be positive", t.connect_retry_ns);
    k.require(t.hello_copies >= 1 && t.hello_copies <= 4, "transport.hello_copies", "must be 1..4",
              t.hello_copies);
    k.require(t.plane_probe_ns > 0, "transport.plane_probe_ns", "must be positive", t.plane_probe_ns);
    k.require(t.rnr_delay_ns > 0, "transport.rnr_delay_ns", "must be positive", t.rnr_delay_ns);
    k.require(t.keepalive_ns > 0, "transport.keepalive_ns", "must be positive", t.keepalive_ns);
    k.require(t.idle_timeout_ns > t.keepalive_ns, "transport.idle_timeout_ns",
              "must be longer than keepalive_ns", t.idle_timeout_ns);
    k.require(t.error_linger_ns > 0, "transport.error_linger_ns", "must be positive", t.error_linger_ns);
    const cc_config& cc = t.cc;
    k.require(cc.path_cwnd_min >= 1 && cc.path_cwnd_min <= cc.path_cwnd_max, "cc.path_cwnd_min",
              "must be at least 1 and at most path_cwnd_max", cc.path_cwnd_min);
    k.require(cc.path_cwnd_max <= wire::k_sack_bits, "cc.path_cwnd_max", "must be at most 256",
              cc.path_cwnd_max);
    k.require(cc.path_cwnd_init >= cc.path_cwnd_min && cc.path_cwnd_init <= cc.path_cwnd_max,
              "cc.path_cwnd_init", "must lie within [path_cwnd_min, path_cwnd_max]", cc.path_cwnd_init);
    k.require(cc.conn_cwnd_min >= 1 && cc.conn_cwnd_min <= cc.conn_cwnd_max, "cc.conn_cwnd_min",
              "must be at least 1 and at most conn_cwnd_max", cc.conn_cwnd_min);
    k.require(cc.conn_cwnd_init >= cc.conn_cwnd_min && cc.conn_cwnd_init <= cc.conn_cwnd_max,
              "cc.conn_cwnd_init", "must lie within [conn_cwnd_min, conn_cwnd_max]", cc.conn_cwnd_init);
    k.require(cc.conn_cwnd_first >= 1, "cc.conn_cwnd_first", "must be at least 1", cc.conn_cwnd_first);
    k.require(cc.ecn_gain > 0 && cc.ecn_gain <= 1, "cc.ecn_gain", "must be in (0, 1]", cc.ecn_gain);
    k.require(cc.additive_increase >= 0 && cc.conn_additive_increase >= 0, "cc.additive_increase",
              "must not be negative", cc.additive_increase);
    k.require(cc.min_rate_hint_mbps >= 1, "cc.min_rate_hint_mbps", "must be at least 1",
              cc.min_rate_hint_mbps);
    return k.result();
}

} // namespace metaroce
