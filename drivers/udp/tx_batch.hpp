// Datagrams built by the core, waiting to go out: one buffer per entry, allocated
// once. flush() sends them with one sendmmsg per socket (a socket sends from one
// source port, so a batch is split by path entropy); what a full socket buffer
// refuses stays queued, in order, for the next flush. With GSO, a run of equal-length
// datagrams of one socket to one destination goes in one UDP_SEGMENT send.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <vector>

#include "udp/udp_counters.hpp"

namespace metaroce::udp {

class tx_batch {
public:
    tx_batch(size_t capacity, size_t max_len, bool gso);
    tx_batch(const tx_batch&) = delete;
    tx_batch& operator=(const tx_batch&) = delete;

    // The buffer the next commit() refers to; empty when every entry is queued.
    std::span<uint8_t> next_buffer() noexcept;
    // Queues the next_buffer() entry: len bytes, from socket fd to ip:port.
    void commit(int fd, uint32_t dst_ip, uint16_t dst_port, size_t len, bool ect) noexcept;
    size_t queued() const noexcept { return n_; }
    bool full() const noexcept { return n_ == cap_; }
    // Sends what is queued; returns how many are still queued (the kernel refused them).
    size_t flush(udp_counters& c) noexcept;

private:
    struct entry {
        int fd = -1;
        uint32_t len = 0;
        bool ect = true;
        sockaddr_in dst{};
    };
    void build_msg(size_t m, size_t first, size_t segs, const entry& e, uint8_t* cbuf) noexcept;

    static constexpr size_t k_cmsg_space = 32;
    static constexpr size_t k_max_segs = 64;           // the kernel's UDP_MAX_SEGMENTS
    static constexpr size_t k_max_gso_bytes = 65000;   // below the 65507-byte UDP payload limit
    bool gso_;
    size_t cap_;
    size_t max_len_;
    std::vector<uint8_t> data_;
    std::vector<uint8_t> ctrl_;
    std::vector<entry> entries_;
    std::vector<uint16_t> order_; // [0, n_): queued entries in send order; [n_, cap_): free
    size_t n_ = 0;
    // Scratch for one sendmmsg call.
    std::vector<iovec> iov_;
    std::vector<mmsghdr> msgs_;
    std::vector<uint16_t> group_;
    std::vector<uint8_t> done_;
    std::vector<uint16_t> msg_first_; // per message: its first segment in iov_/group_
    std::vector<uint16_t> msg_segs_;
};

} // namespace metaroce::udp
