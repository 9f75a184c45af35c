// Two net_ring ports in one process joined back to back: what port a sends, port b
// receives from ring ab, and the other way through ba. The rings are exposed so a test
// can look at frames in flight. Throws std::runtime_error when DPDK refuses.
#pragma once

#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace metaroce::test {

struct ring_link {
    uint16_t a = 0;
    uint16_t b = 0;
    rte_ring* ab = nullptr; // a's TX, b's RX
    rte_ring* ba = nullptr; // b's TX, a's RX
};

// Ring and port names start with `name`, which must be unique in the process.
inline ring_link make_ring_link(const std::string& name, unsigned slots)
{
    ring_link l;
    l.ab = rte_ring_create((name + "ab").c_str(), slots, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    l.ba = rte_ring_create((name + "ba").c_str(), slots, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (l.ab == nullptr || l.ba == nullptr) {
        throw std::runtime_error("rte_ring_create failed");
    }
    const int pa = rte_eth_from_rings((name + "a").c_str(), &l.ba, 1, &l.ab, 1, 0);
    const int pb = rte_eth_from_rings((name + "b").c_str(), &l.ab, 1, &l.ba, 1, 0);
    if (pa < 0 || pb < 0) {
        throw std::runtime_error("rte_eth_from_rings failed");
    }
    l.a = uint16_t(pa);
    l.b = uint16_t(pb);
    return l;
}

} // namespace metaroce::test
