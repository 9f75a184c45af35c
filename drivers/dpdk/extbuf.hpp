// Zero-copy transmit: the registered memory a worker's ports may send from in place.
// A data frame then leaves as a chain: its headers in a direct mbuf, each payload
// piece (tx_frame::payload) in an mbuf attached to the region's memory with
// rte_pktmbuf_attach_extbuf. The region's shared info counts those mbufs: one
// reference is the registration's, every attached mbuf adds one until the PMD frees
// it; so a region is forgotten only once its count is back to one (none in flight).
// A payload shorter than worker_config::tx_copy_below (256 bytes) is copied behind the
// headers instead: the second mbuf would cost more than the copy.
//
// DMA: memory that is not DPDK's (rte_mem_virt2memseg_list finds no list) is added
// with rte_extmem_register and mapped with rte_dev_dma_map for each port's device.
// A device that cannot map (virtual devices: memif, ring, af_packet copy with the CPU)
// is recorded as such and still sends from it; a device whose mapping failed does not
// (its frames from that region are copied).
#pragma once

#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace metaroce::dpdk {

class extbuf_regions {
public:
    struct region {
        const uint8_t* base = nullptr;
        size_t len = 0;
        rte_mbuf_ext_shared_info shinfo{}; // refcnt = 1 + mbufs in flight
        bool dpdk_memory = false;          // from DPDK's allocator (already DMA-able)
        bool extmem = false;               // we added it with rte_extmem_register
        uint32_t usable_ports = 0;         // bit i: ports[i] may read it (DMA mapped or CPU)
        std::vector<bool> mapped;          // per port: rte_dev_dma_map succeeded
        std::string dma_note;              // what registering for DMA did, for diagnostics
        // IOVA-as-PA: the DPDK memory segment the last frame came from (IOVA contiguous).
        const uint8_t* seg_lo = nullptr;
        const uint8_t* seg_hi = nullptr;
        rte_iova_t seg_iova = RTE_BAD_IOVA;
        uint32_t in_flight() const noexcept { return uint32_t(rte_mbuf_ext_refcnt_read(&shinfo)) - 1; }
    };

    explicit extbuf_regions(std::vector<uint16_t> ports) : ports_(std::move(ports)) {}
    ~extbuf_regions();
    extbuf_regions(const extbuf_regions&) = delete;
    extbuf_regions& operator=(const extbuf_regions&) = delete;

    // Adds [base, base + len); a range already added is left as it is.
    const region& add(const void* base, size_t len);
    // The region starting at base, or null.
    const region* find(const void* base) const noexcept;
    // Forgets it (undoing the DMA registration); only when none of its mbufs is in flight.
    bool remove(const void* base) noexcept;

    // Attaches m (a fresh direct mbuf) to [host, host + len) when that lies in one region
    // port index `port` may read; false: not here (the caller copies).
    bool attach(rte_mbuf* m, const uint8_t* host, uint32_t len, size_t port) noexcept;
    // Whether attach() would succeed (it only finds, and keeps, the IOVA segment).
    bool covers(const uint8_t* host, uint32_t len, size_t port) noexcept;
    // IOVA-as-PA segment look-ups so far: one per hugepage a region's frames enter.
    uint64_t iova_lookups() const noexcept { return iova_lookups_; }

    size_t size() const noexcept { return regions_.size(); }

private:
    region* lookup(const uint8_t* host, uint32_t len, size_t port) noexcept;
    // The IOVA a port DMAs [host, host + len) from; false: not one contiguous piece.
    bool iova_of(region& r, const uint8_t* host, uint32_t len, rte_iova_t& iova) noexcept;
    void map_for_dma(region& r);
    void unmap(region& r) noexcept;

    std::vector<uint16_t> ports_;
    std::vector<std::unique_ptr<region>> regions_;
    size_t last_ = 0; // the last region hit: a run of packets comes from one region
    uint64_t iova_lookups_ = 0;
};

} // namespace metaroce::dpdk
