// What a simulated host drives: the endpoint-shaped surface both transports offer,
// so the fabric, the host driver, the workload and the verification are shared.
// metaroce_transport wraps the real core; rocev2::rnic is the RoCEv2 model (an RNIC of one host).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "metaroce/counters.hpp"
#include "metaroce/io_types.hpp"
#include "metaroce/memory_region.hpp"
#include "metaroce/verbs_types.hpp"

namespace metaroce::sim {

struct scenario;

class sim_transport {
public:
    virtual ~sim_transport() = default;

    virtual mr_table& memory() noexcept = 0;
    virtual conn_id connect(uint32_t peer_addr, uint64_t now_ns) = 0;
    virtual post_result post_send(conn_id c, const send_wr& wr, uint64_t now_ns) = 0;
    virtual post_result post_recv(conn_id c, uint16_t stream, const recv_wr& wr) = 0;
    virtual size_t poll_cq(std::span<completion> out) = 0;
    virtual size_t poll_events(std::span<conn_event> out) = 0;

    virtual void on_packet(const rx_meta& meta, std::span<const uint8_t> bytes, uint64_t now_ns) = 0;
    virtual bool poll_tx(uint64_t now_ns, tx_frame& frame) = 0;
    virtual uint64_t next_timer() const noexcept = 0;
    virtual void on_timer(uint64_t now_ns) = 0;

    virtual const counters& stats() const noexcept = 0;
    // The id the peer gave this connection (to pair the two sides in the workload).
    virtual std::optional<conn_id> peer_conn(conn_id c) const = 0;
    // Bytes of transport state this connection holds (its share of the tables).
    virtual size_t state_bytes(conn_id c) const = 0;
    // Peak bytes of shared pools connections draw state from while busy (0: none).
    virtual size_t pool_peak_bytes() const { return 0; }
    // Counters only this transport has, reported under its own name.
    virtual std::vector<std::pair<std::string, uint64_t>> extra_counters() const { return {}; }
};

// What one host carries, to size its tables.
struct host_load {
    uint32_t connections = 0;  // as initiator or target
    uint32_t regions = 0;      // registered regions the workload needs on it
};

// Builds the transport the scenario names for host `index`.
std::unique_ptr<sim_transport> make_transport(uint32_t index, const scenario& s,
                                              const host_load& load);

} // namespace metaroce::sim
