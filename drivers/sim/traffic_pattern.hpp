// Who sends to whom. pairs: host i -> (i + H/2) % H for i < senders; incast:
// hosts 1..senders -> host 0 (the data's direction: with READ host 0 initiates and
// reads from each); alltoall: each of the first `senders` hosts to every other host;
// allreduce_ring: each of the first `senders` hosts to its successor.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "sim/scenario.hpp"

namespace metaroce::sim {

// The pattern's distinct (initiator, target) pairs, in a fixed order. allreduce_ring:
// host i -> (i + 1) % senders for i < senders.
std::vector<std::pair<uint32_t, uint32_t>> plan_pairs(const scenario& s);
// (initiator, target) per connection: workload.connections spread round-robin over
// the pairs (one per pair when 0). The victim is not included.
std::vector<std::pair<uint32_t, uint32_t>> plan_connections(const scenario& s);
// The incast victim connection, when configured: data from host H-1 to host 1
// (initiator 1 with READ).
std::optional<std::pair<uint32_t, uint32_t>> victim_pair(const scenario& s);
// Bytes per message and messages per connection (allreduce_ring: message_bytes /
// senders per step, 2 (senders - 1) steps).
uint64_t message_payload(const scenario& s);
uint64_t messages_per_connection(const scenario& s);

// Line rate the workload could reach with no loss: the smaller side of the data
// flow (distinct sources vs distinct sinks) at planes x link rate per host, times
// the share of each wire byte that is payload (Ethernet/IP/UDP/FCS/IFG + transport
// data headers counted per packet).
double loss_free_bound_gbps(const scenario& s);
// Wire bytes of a full-size data packet (mtu of payload, headers, framing).
uint32_t full_packet_wire_bytes(const scenario& s);

} // namespace metaroce::sim
