// One recvmmsg batch: the buffers, addresses and ancillary data of up to `burst`
// datagrams, allocated once. Each datagram comes with its source address and port,
// its ECN field, whether it was cut short, and (GRO) the size of the datagrams the
// kernel coalesced into it.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <vector>

namespace metaroce::udp {

struct rx_datagram {
    std::span<const uint8_t> bytes;
    uint32_t src_ip = 0;      // host order
    uint16_t src_port = 0;
    bool ce = false;
    bool truncated = false;   // longer than the buffer
    uint16_t seg_size = 0;    // GRO: `bytes` holds datagrams of this size (the last may be
                              // shorter), coalesced by the kernel; 0: one datagram
};

class rx_batch {
public:
    // With gro, each buffer holds a whole coalesced run (up to 64 KiB).
    rx_batch(size_t burst, size_t max_len, bool gro);
    rx_batch(const rx_batch&) = delete;
    rx_batch& operator=(const rx_batch&) = delete;

    // Receives what is waiting on fd, up to burst datagrams; 0 if none. `drops` is the
    // socket's running drop count (SO_RXQ_OVFL), updated when the kernel reports it.
    size_t recv(int fd, uint32_t& drops);
    rx_datagram at(size_t i) const noexcept;

private:
    static constexpr size_t k_cmsg_space = 64;
    size_t burst_;
    size_t max_len_;
    std::vector<uint8_t> data_;
    std::vector<uint8_t> ctrl_;
    std::vector<sockaddr_in> from_;
    std::vector<iovec> iov_;
    std::vector<mmsghdr> msgs_;
    std::vector<uint8_t> ce_;
    std::vector<uint16_t> seg_;
};

} // namespace metaroce::udp
