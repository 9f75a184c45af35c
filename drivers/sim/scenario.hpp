// Everything one model run needs, with the defaults a scenario file may omit.
// doc/model.md lists every key; scenario_json.cpp maps the file onto these structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "metaroce/config.hpp"
#include "metaroce/verbs_types.hpp"

namespace metaroce::sim {

inline constexpr uint32_t k_max_planes = 16;

struct topology_params {
    uint32_t hosts = 16;
    uint32_t planes = 2;
    uint32_t spines_per_plane = 4;
    uint32_t hosts_per_leaf = 4;
    double link_gbps = 100;
    uint64_t link_delay_ns = 1000;
    uint64_t switch_buffer_bytes = 1u << 20;
    uint64_t ecn_threshold_bytes = 100'000;

    uint32_t leaves() const noexcept { return (hosts + hosts_per_leaf - 1) / hosts_per_leaf; }
};

// Scale-across: leaves from site_b_leaf on form a second site. Traffic between the sites
// crosses a long-haul link between spine s of each site (one route per spine and plane,
// each way), after the leaf-spine hop and before the spine-leaf hop.
struct long_haul_params {
    uint32_t site_b_leaf = 0;       // 0: one site, no long-haul links
    uint64_t delay_ns = 1'000'000;  // one way
    double gbps = 100;
    uint32_t slow_routes = 0;       // plane 0's first slow_routes spines run at slow_gbps
    double slow_gbps = 10;

    bool enabled() const noexcept { return site_b_leaf != 0; }
};

enum class loss_kind : uint8_t { none, iid, gilbert };

struct loss_params {
    loss_kind model = loss_kind::none;
    double rate = 0;   // mean fraction of packets lost
    double burst = 1;  // gilbert: mean packets per loss burst
};

enum class fault_action : uint8_t {
    fail_plane,
    restore_plane,
    fail_link,
    restore_link,
    fail_switch,
    restore_switch,
};

// A link is named by plane and either (leaf, spine) or host (its host-leaf link);
// a switch by plane and either leaf or spine (all of its links fail with it).
struct fault_event {
    uint64_t at_ns = 0;
    fault_action action = fault_action::fail_plane;
    uint32_t plane = 0;
    std::optional<uint32_t> leaf;
    std::optional<uint32_t> spine;
    std::optional<uint32_t> host;
};

enum class pattern_kind : uint8_t { pairs, incast, alltoall, allreduce_ring };

struct workload_params {
    pattern_kind pattern = pattern_kind::pairs;
    uint32_t senders = 1;
    uint64_t message_bytes = 65536;
    uint64_t messages = 16;          // per connection
    wr_opcode op = wr_opcode::write;
    uint16_t streams = 1;
    uint32_t outstanding = 8;        // messages in flight per connection
    // Total concurrent connections, spread round-robin over the pattern's pairs;
    // 0 means one per pair.
    uint32_t connections = 0;
    // Incast only: one more connection, host H-1 -> host 1 (under the sink's leaf),
    // writing for as long as the incast runs; reported as `victim`, not in the totals.
    bool victim = false;
};

// Which transport every host runs.
enum class protocol_kind : uint8_t { metaroce, rocev2_model };

struct protocol_params {
    protocol_kind kind = protocol_kind::metaroce;
    // rocev2_model: QP k of a host on plane k % planes (multi-rail) instead of plane 0.
    bool spread_planes = false;
    // rocev2_model: local ACK timeout. 4.096 us x 2^8, a short setting of the verbs
    // `timeout` attribute (defaults are 2^14 and up); retried 7 times.
    uint64_t rocev2_timeout_ns = 1'048'576;
    // rocev2_model: ACK_REQ every this many bytes of a message. Its own default, not the
    // core's (which moved to 32 KiB); `transport.ack_every_bytes` sets both.
    uint32_t rocev2_ack_every_bytes = 16384;
};

struct scenario {
    std::string name = "unnamed";
    uint64_t seed = 1;
    std::optional<uint64_t> duration_ns;  // stop here even if messages are pending
    topology_params topology;
    long_haul_params long_haul;
    transport_config transport;           // planes is set from topology.planes
    protocol_params protocol;
    loss_params loss;
    std::vector<fault_event> events;
    workload_params workload;
    uint64_t timeline_ns = 10'000;        // goodput timeline bin
};

// Hard stop when a scenario gives no duration, so a stuck transport cannot run forever.
inline constexpr uint64_t k_default_time_limit_ns = 10'000'000'000ull;

} // namespace metaroce::sim
