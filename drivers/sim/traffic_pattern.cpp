#include "sim/traffic_pattern.hpp"

#include <algorithm>
#include <set>

#include "metaroce/wire/codec.hpp"
#include "sim/wire_size.hpp"

namespace metaroce::sim {

std::vector<std::pair<uint32_t, uint32_t>> plan_connections(const scenario& s)
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
        for (uint32_t i = 1; i <= w.senders; ++i) {
            pairs.emplace_back(i, 0);
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
    }
    std::vector<std::pair<uint32_t, uint32_t>> conns;
    for (const auto& p : pairs) {
        for (uint32_t k = 0; k < w.connections; ++k) {
            conns.push_back(p);
        }
    }
    return conns;
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
    const double rate = nics * s.topology.planes * s.topology.link_gbps;
    const uint64_t msg = s.workload.message_bytes;
    const uint64_t packets = (msg + s.transport.mtu - 1) / s.transport.mtu;
    const uint64_t per_packet = k_frame_overhead_bytes + wire::data_header_len(data_opcode(s.workload.op));
    return rate * double(msg) / double(msg + packets * per_packet);
}

} // namespace metaroce::sim
