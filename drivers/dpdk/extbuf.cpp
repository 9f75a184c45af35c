// rte_dev_dma_map/unmap are experimental in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1

#include "dpdk/extbuf.hpp"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_memory.h>

#include <unistd.h>

#include <string>
#include <string_view>

#include "dpdk/eal.hpp"

namespace metaroce::dpdk {

namespace {

// Called when a region's count reaches zero, which only remove() could cause: the
// registration holds one reference, so in flight never frees anything.
void region_released(void*, void*) {}

uintptr_t page_floor(uintptr_t a, size_t pg) { return a & ~(uintptr_t(pg) - 1); }
uintptr_t page_ceil(uintptr_t a, size_t pg) { return page_floor(a + pg - 1, pg); }

rte_device* port_device(uint16_t port)
{
    rte_eth_dev_info info{};
    return rte_eth_dev_info_get(port, &info) == 0 ? info.device : nullptr;
}

} // namespace

extbuf_regions::~extbuf_regions()
{
    for (auto& r : regions_) {
        unmap(*r);
    }
}

const extbuf_regions::region& extbuf_regions::add(const void* base, size_t len)
{
    if (const region* r = find(base); r != nullptr) {
        return *r;
    }
    auto r = std::make_unique<region>();
    r->base = static_cast<const uint8_t*>(base);
    r->len = len;
    r->shinfo.free_cb = region_released;
    r->shinfo.fcb_opaque = r.get();
    rte_mbuf_ext_refcnt_set(&r->shinfo, 1);
    map_for_dma(*r);
    regions_.push_back(std::move(r));
    return *regions_.back();
}

const extbuf_regions::region* extbuf_regions::find(const void* base) const noexcept
{
    for (const auto& r : regions_) {
        if (r->base == base) {
            return r.get();
        }
    }
    return nullptr;
}

bool extbuf_regions::remove(const void* base) noexcept
{
    for (size_t i = 0; i < regions_.size(); ++i) {
        if (regions_[i]->base == base) {
            if (regions_[i]->in_flight() != 0) {
                return false;
            }
            unmap(*regions_[i]);
            regions_.erase(regions_.begin() + ptrdiff_t(i));
            last_ = 0;
            return true;
        }
    }
    return true;
}

void extbuf_regions::map_for_dma(region& r)
{
    r.mapped.assign(ports_.size(), false);
    // External memory (rte_extmem_register'd, e.g. a page another region shares) is
    // not DPDK's allocator's: it is DMA-able only where mapped.
    if (const rte_memseg_list* msl = rte_mem_virt2memseg_list(r.base); msl != nullptr && !msl->external) {
        r.dpdk_memory = true;
        r.dma_note = "DPDK memory";
    }
    // rte_extmem_register takes whole pages; a region sharing a page with one added
    // before fails with EEXIST and is then usable only by ports that do not map.
    const size_t pg = size_t(sysconf(_SC_PAGESIZE));
    const uintptr_t lo = page_floor(reinterpret_cast<uintptr_t>(r.base), pg);
    const uintptr_t hi = page_ceil(reinterpret_cast<uintptr_t>(r.base) + r.len, pg);
    if (!r.dpdk_memory) {
        r.extmem = rte_extmem_register(reinterpret_cast<void*>(lo), hi - lo, nullptr, 0, pg) == 0;
        r.dma_note = r.extmem ? "rte_extmem_register ok" : std::string("rte_extmem_register: ") + rte_strerror(rte_errno);
    }
    const bool iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
    for (size_t i = 0; i < ports_.size(); ++i) {
        rte_device* dev = port_device(ports_[i]);
        const std::string port = "; port " + std::to_string(ports_[i]);
        if (r.dpdk_memory || dev == nullptr || rte_dev_bus(dev) == nullptr ||
            std::string_view(rte_bus_name(rte_dev_bus(dev))) == "vdev") {
            r.usable_ports |= 1u << i; // DPDK's memory is mapped; a virtual device reads with the CPU
            r.dma_note += port + (r.dpdk_memory ? ": already DMA-able" : ": virtual device, no DMA mapping needed");
            continue;
        }
        // Physical addresses of foreign memory are unknown: map only in IOVA-as-VA mode.
        const int rc = iova_va ? rte_dev_dma_map(dev, reinterpret_cast<void*>(lo), lo, hi - lo) : -1;
        const int err = iova_va ? rte_errno : EINVAL;
        if (rc == 0) {
            r.mapped[i] = true;
            r.usable_ports |= 1u << i;
            r.dma_note += port + " DMA-mapped";
        } else {
            r.dma_note += port + " rte_dev_dma_map: " + rte_strerror(err) +
                          " (its frames from here are copied)";
        }
    }
}

void extbuf_regions::unmap(region& r) noexcept
{
    const size_t pg = size_t(sysconf(_SC_PAGESIZE));
    const uintptr_t lo = page_floor(reinterpret_cast<uintptr_t>(r.base), pg);
    const uintptr_t hi = page_ceil(reinterpret_cast<uintptr_t>(r.base) + r.len, pg);
    for (size_t i = 0; i < r.mapped.size(); ++i) {
        if (r.mapped[i]) {
            if (rte_device* dev = port_device(ports_[i]); dev != nullptr) {
                rte_dev_dma_unmap(dev, reinterpret_cast<void*>(lo), lo, hi - lo);
            }
        }
    }
    if (r.extmem) {
        rte_extmem_unregister(reinterpret_cast<void*>(lo), hi - lo);
    }
    r.mapped.assign(r.mapped.size(), false);
    r.extmem = false;
}

extbuf_regions::region* extbuf_regions::lookup(const uint8_t* host, uint32_t len, size_t port) noexcept
{
    auto inside = [&](const region& r) {
        return host >= r.base && host + len <= r.base + r.len && (r.usable_ports >> port & 1u) != 0;
    };
    if (last_ < regions_.size() && inside(*regions_[last_])) {
        return regions_[last_].get();
    }
    for (size_t i = 0; i < regions_.size(); ++i) {
        if (inside(*regions_[i])) {
            last_ = i;
            return regions_[i].get();
        }
    }
    return nullptr;
}

bool extbuf_regions::iova_of(region& r, const uint8_t* host, uint32_t len, rte_iova_t& iova) noexcept
{
    if (rte_eal_iova_mode() == RTE_IOVA_VA) {
        iova = reinterpret_cast<uintptr_t>(host);
        return true;
    }
    if (!r.dpdk_memory) {
        iova = RTE_BAD_IOVA; // only ports that read with the CPU were allowed this memory
        return true;
    }
    // Not rte_mem_virt2iova: with IOVA as PA it reads /proc/self/pagemap (open, seek,
    // read, close) on every call, which cut write_bw 64 KiB over memif to a quarter.
    // The segment's IOVA is looked up once per segment (a hugepage), then kept.
    if (host < r.seg_lo || host + len > r.seg_hi) {
        const rte_memseg* ms = rte_mem_virt2memseg(host, nullptr);
        if (ms == nullptr || ms->iova == RTE_BAD_IOVA) {
            return false;
        }
        r.seg_lo = static_cast<const uint8_t*>(ms->addr);
        r.seg_hi = r.seg_lo + ms->len;
        r.seg_iova = ms->iova;
        ++iova_lookups_;
        if (host + len > r.seg_hi) {
            return false; // spans two pages that need not be contiguous: copied
        }
    }
    iova = r.seg_iova + rte_iova_t(host - r.seg_lo);
    return true;
}

bool extbuf_regions::covers(const uint8_t* host, uint32_t len, size_t port) noexcept
{
    region* r = lookup(host, len, port);
    rte_iova_t iova = RTE_BAD_IOVA;
    return r != nullptr && len <= UINT16_MAX && iova_of(*r, host, len, iova);
}

bool extbuf_regions::attach(rte_mbuf* m, const uint8_t* host, uint32_t len, size_t port) noexcept
{
    region* r = lookup(host, len, port);
    rte_iova_t iova = RTE_BAD_IOVA;
    if (r == nullptr || len > UINT16_MAX || !iova_of(*r, host, len, iova)) {
        return false;
    }
    rte_mbuf_ext_refcnt_update(&r->shinfo, 1);
    rte_pktmbuf_attach_extbuf(m, const_cast<uint8_t*>(host), iova, uint16_t(len), &r->shinfo);
    m->data_len = uint16_t(len);
    m->pkt_len = len;
    return true;
}

} // namespace metaroce::dpdk
