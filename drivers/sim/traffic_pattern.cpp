#include "sim/traffic_pattern.hpp"

#include <algorithm>
#include <set>

#include "metaroce/wire/codec.hpp"
#include "sim/rocev2/wire.hpp"
#include "sim/wire_size.hpp"

namespace metaroce::sim {

std::vector<std::pair<uint32_t, uint32_t>> plan_pairs(const scenario& s)
{
    const uint32_t hosts = s.topology.hosts;
    const auto& w = s.workload;
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    switch (w.pattern) {
    case pattern_kind::pairs:
        for (uint32_t i = 0; i < w.senders; ++i) {
            pairs.emplace_back(i, (i + hosts / 2) % hosts);
        }
        break;
    case pattern_kind::incast:
        // The data converges on host 0 whatever the op: with READ host 0 is the
        // initiator, a client reading from every sender at once (READ fan-in).
        for (uint32_t i = 1; i <= w.senders; ++i) {
            pairs.push_back(w.op == wr_opcode::read ? std::pair<uint32_t, uint32_t>(0, i)
                                                    : std::pair<uint32_t, uint32_t>(i, 0));
        }
        break;
    case pattern_kind::alltoall:
        for (uint32_t i = 0; i < w.senders; ++i) {
            for (uint32_t j = 0; j < hosts; ++j) {
                if (j != i) {
                    pairs.emplace_back(i, j);
                }
            }
        }
        break;
    case pattern_kind::allreduce_ring:
        for (uint32_t i = 0; i < w.senders; ++i) {
            pairs.emplace_back(i, (i + 1) % w.senders);
        }
        break;
    }
    return pairs;
}

std::vector<std::pair<uint32_t, uint32_t>> plan_connections(const scenario& s)
{
    const auto pairs = plan_pairs(s);
    const uint64_t total = s.workload.connections == 0 ? pairs.size() : s.workload.connections;
    std::vector<std::pair<uint32_t, uint32_t>> conns;
    conns.reserve(total);
    // Round-robin over the pairs: pair k carries connections k, k + pairs, ...
    for (uint64_t i = 0; i < total; ++i) {
        conns.push_back(pairs[i % pairs.size()]);
    }
    return conns;
}

std::optional<std::pair<uint32_t, uint32_t>> victim_pair(const scenario& s)
{
    if (!s.workload.victim) {
        return std::nullopt;
    }
    // Data from H-1 to host 1, like the incast's: with READ, host 1 reads from H-1.
    const uint32_t far = s.topology.hosts - 1;
    return s.workload.op == wr_opcode::read ? std::make_pair(uint32_t(1), far)
                                            : std::make_pair(far, uint32_t(1));
}

uint64_t message_payload(const scenario& s)
{
    const auto& w = s.workload;
    if (w.pattern == pattern_kind::allreduce_ring) {
        return std::max<uint64_t>(1, (w.message_bytes + w.senders - 1) / w.senders);
    }
    return w.message_bytes;
}

uint64_t messages_per_connection(const scenario& s)
{
    const auto& w = s.workload;
    if (w.pattern == pattern_kind::allreduce_ring) {
        return 2 * uint64_t(w.senders - 1);
    }
    return w.messages;
}

namespace {
wire::opcode data_opcode(wr_opcode op)
{
    switch (op) {
    case wr_opcode::write:
        return wire::opcode::write;
    case wr_opcode::write_imm:
        return wire::opcode::write_imm;
    case wr_opcode::send:
        return wire::opcode::send;
    case wr_opcode::send_imm:
        return wire::opcode::send_imm;
    case wr_opcode::read:
        return wire::opcode::read_resp; // the data travels in READ responses
    }
    return wire::opcode::write;
}
} // namespace

double loss_free_bound_gbps(const scenario& s)
{
    std::set<uint32_t> sources;
    std::set<uint32_t> sinks;
    for (const auto& [from, to] : plan_connections(s)) {
        const bool read = s.workload.op == wr_opcode::read;
        sources.insert(read ? to : from);
        sinks.insert(read ? from : to);
    }
    const double nics = double(std::min(sources.size(), sinks.size()));
    // The RoCEv2 model uses one plane unless its QPs are spread over the planes.
    const bool one_plane = s.protocol.kind == protocol_kind::rocev2_model && !s.protocol.spread_planes;
    const double rate = nics * (one_plane ? 1 : s.topology.planes) * s.topology.link_gbps;
    const uint64_t msg = message_payload(s);
    const uint64_t packets = (msg + s.transport.mtu - 1) / s.transport.mtu;
    const uint64_t per_packet = full_packet_wire_bytes(s) - s.transport.mtu;
    return rate * double(msg) / double(msg + packets * per_packet);
}

uint32_t full_packet_wire_bytes(const scenario& s)
{
    if (s.protocol.kind == protocol_kind::rocev2_model) {
        // BTH + ICRC on every packet, RETH on the first: charge RETH to every packet
        // only in the one-packet case.
        return s.transport.mtu + k_frame_overhead_bytes + uint32_t(rocev2::data_len(rocev2::op::write_middle, 0));
    }
    return s.transport.mtu + k_frame_overhead_bytes + uint32_t(wire::data_header_len(data_opcode(s.workload.op)));
}

} // namespace metaroce::sim
