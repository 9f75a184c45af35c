// The socket calls of the UDP backend, each failure turned into a message that names
// the address and what is wrong with it.
#pragma once

#include <cstdint>
#include <string>

namespace metaroce::udp {

// "127.0.0.1:4796"
std::string addr_str(uint32_t addr, uint16_t port);

// A non-blocking IPv4 UDP socket bound to addr:port. Throws std::runtime_error.
int open_bound(uint32_t addr, uint16_t port, int buffer_bytes);
// As open_bound, but returns -1 with errno EADDRINUSE when the port is taken, so the
// caller can pick another.
int try_open_bound(uint32_t addr, uint16_t port, int buffer_bytes);

// Receive side: TOS (for CE) and the socket's drop counter with every datagram.
void enable_rx_meta(int fd);
// Receive coalesced runs (UDP_GRO); false if the kernel has no UDP GRO.
bool enable_gro(int fd) noexcept;
// Send side: ECT(0) in every datagram's IP header.
void set_ect0(int fd); // and DF (spec 2.1), GSO segments included

// A fd that closes itself.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    ~unique_fd();
    unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
    unique_fd& operator=(unique_fd&& o) noexcept;
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    int get() const noexcept { return fd_; }
    int release() noexcept
    {
        const int f = fd_;
        fd_ = -1;
        return f;
    }

private:
    int fd_ = -1;
};

} // namespace metaroce::udp
