// Preallocated packet buffers and their metadata, handed around by index: a packet
// is built once by the sender's core and never copied as it crosses the fabric.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace metaroce::sim {

// What the fabric knows about a packet: the IP/UDP fields and the ECN bits.
struct packet_meta {
    uint32_t src_host = 0;
    uint32_t dst_host = 0;
    uint32_t len = 0;        // transport bytes (the UDP payload)
    uint32_t wire_bytes = 0; // on-link size including all framing
    uint16_t udp_sport = 0;
    uint8_t plane = 0;
    bool ect = false;
    bool ce = false;
};

class packet_pool {
public:
    // Buffers of buf_bytes each, allocated chunk_packets at a time when the free list
    // runs dry (a few times per run, never per packet).
    packet_pool(size_t buf_bytes, uint32_t chunk_packets = 4096);

    uint32_t alloc();
    void free(uint32_t idx) noexcept { free_.push_back(idx); }

    std::span<uint8_t> buffer(uint32_t idx) noexcept
    {
        return {chunks_[idx / chunk_packets_].get() + size_t(idx % chunk_packets_) * buf_bytes_,
                buf_bytes_};
    }
    packet_meta& meta(uint32_t idx) noexcept { return meta_[idx]; }

    size_t capacity() const noexcept { return meta_.size(); }
    size_t in_use() const noexcept { return meta_.size() - free_.size(); }
    size_t buf_bytes() const noexcept { return buf_bytes_; }

private:
    void grow();

    size_t buf_bytes_;
    uint32_t chunk_packets_;
    std::vector<std::unique_ptr<uint8_t[]>> chunks_;
    std::vector<packet_meta> meta_;
    std::vector<uint32_t> free_;
};

} // namespace metaroce::sim
