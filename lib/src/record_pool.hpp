// In-flight packet records of every connection of an endpoint, in chunks of 16 drawn
// from one pool sized at endpoint creation (endpoint_config::record_chunks): a
// connection pays for the packets it has on the wire, not for paths x 256. Taking and
// returning a chunk never allocates.
#pragma once

#include <cstdint>
#include <memory>

namespace metaroce::detail {

enum class rec_kind : uint8_t { request, read_resp };
enum class rec_state : uint8_t { free, in_flight, sacked, lost, rnr_hold };

// Sender: one PSN on a path, enough to rebuild the packet from the message.
// No member initializers: the pool's memory is left untouched until a chunk is used
// (send_new writes a whole record before it is read).
struct pkt_record {
    uint32_t msn;
    uint32_t offset;
    uint32_t sent_ts;
    uint32_t xmit_no;   // path transmit counter at the last (re)transmission
    uint16_t len;
    uint16_t slot;      // send slot or read job index
    rec_kind kind;
    rec_state state;
    uint8_t retx;       // resends, a proactive copy included
    bool ack_req : 1;   // sent asking for an immediate ACK (no delayed-ACK allowance)
    bool copied : 1;    // a proactive copy went out (spec 5.10): counted in connection::copies
};

inline constexpr uint32_t k_chunk_shift = 4;
inline constexpr uint32_t k_chunk_records = 1u << k_chunk_shift;

class record_pool {
public:
    static constexpr uint16_t k_nil = 0xffff; // no chunk; so at most 65535 chunks

    explicit record_pool(uint32_t chunks)
        : recs_(std::make_unique_for_overwrite<pkt_record[]>(size_t(chunks) * k_chunk_records)),
          free_(std::make_unique<uint16_t[]>(chunks)), free_count_(chunks), capacity_(chunks)
    {
        for (uint32_t i = 0; i < chunks; ++i) {
            free_[i] = uint16_t(chunks - 1 - i); // chunk 0 on top: taken first
        }
    }

    pkt_record* base() noexcept { return recs_.get(); }
    bool empty() const noexcept { return free_count_ == 0; }
    // A free chunk, or k_nil when every chunk is taken.
    uint16_t take() noexcept
    {
        if (free_count_ == 0) {
            return k_nil;
        }
        peak_ = capacity_ - free_count_ + 1 > peak_ ? capacity_ - free_count_ + 1 : peak_;
        return free_[--free_count_];
    }
    void give(uint16_t chunk) noexcept { free_[free_count_++] = chunk; }
    uint32_t capacity() const noexcept { return capacity_; }
    uint32_t in_use() const noexcept { return capacity_ - free_count_; }
    uint32_t peak() const noexcept { return peak_; } // most chunks ever in use at once

private:
    std::unique_ptr<pkt_record[]> recs_;
    std::unique_ptr<uint16_t[]> free_; // a stack: the chunk used last is reused first (warm)
    uint32_t free_count_ = 0;
    uint32_t capacity_ = 0;
    uint32_t peak_ = 0;
};

} // namespace metaroce::detail
