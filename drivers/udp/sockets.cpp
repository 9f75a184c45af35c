#include "udp/sockets.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "udp/node.hpp"

namespace metaroce::udp {

namespace {

[[noreturn]] void fail(const std::string& what, int err)
{
    throw std::runtime_error(what + ": " + std::strerror(err));
}

// Forced sizes need CAP_NET_ADMIN; without it the kernel caps at net.core.*mem_max.
void set_buffer(int fd, int opt_force, int opt, int bytes)
{
    if (bytes <= 0) {
        return;
    }
    if (setsockopt(fd, SOL_SOCKET, opt_force, &bytes, sizeof bytes) != 0) {
        (void)setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
    }
}

} // namespace

std::string addr_str(uint32_t addr, uint16_t port)
{
    char buf[INET_ADDRSTRLEN] = {};
    const in_addr a{htonl(addr)};
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port);
}

uint32_t parse_ipv4(const char* s)
{
    in_addr a{};
    if (s == nullptr || inet_pton(AF_INET, s, &a) != 1) {
        throw std::runtime_error(std::string("not an IPv4 address: '") + (s ? s : "") + "'");
    }
    return ntohl(a.s_addr);
}

int try_open_bound(uint32_t addr, uint16_t port, int buffer_bytes)
{
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail("socket(AF_INET, SOCK_DGRAM)", errno);
    }
    set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, buffer_bytes);
    set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, buffer_bytes);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(addr);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) {
        return fd;
    }
    const int err = errno;
    close(fd);
    if (err == EADDRINUSE) {
        errno = EADDRINUSE;
        return -1;
    }
    if (err == EADDRNOTAVAIL) {
        const std::string a = addr_str(addr, port);
        throw std::runtime_error("cannot bind " + a + ": " + a.substr(0, a.find(':')) +
                                 " is not an address of this machine");
    }
    fail("bind " + addr_str(addr, port), err);
}

int open_bound(uint32_t addr, uint16_t port, int buffer_bytes)
{
    const int fd = try_open_bound(addr, port, buffer_bytes);
    if (fd < 0) {
        throw std::runtime_error(addr_str(addr, port) + " is in use by another process");
    }
    return fd;
}

void enable_rx_meta(int fd)
{
    const int on = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof on) != 0) {
        fail("setsockopt IP_RECVTOS", errno);
    }
    if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on) != 0) {
        fail("setsockopt SO_RXQ_OVFL", errno);
    }
}

bool enable_gro(int fd) noexcept
{
    const int on = 1;
    return setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
}

void set_ect0(int fd)
{
    const int tos = 0x02; // ECN field 10: ECT(0) (spec 2.4)
    if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) != 0) {
        fail("setsockopt IP_TOS", errno);
    }
    // DF on every datagram (spec 2.1). The default (PMTUDISC_WANT) sets it only on an
    // skb that fits the route MTU, which a UDP_SEGMENT send never does: its segments
    // would leave without DF.
    const int pmtu = IP_PMTUDISC_DO;
    if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu) != 0) {
        fail("setsockopt IP_MTU_DISCOVER", errno);
    }
}

unique_fd::~unique_fd()
{
    if (fd_ >= 0) {
        close(fd_);
    }
}

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept
{
    if (this != &o) {
        if (fd_ >= 0) {
            close(fd_);
        }
        fd_ = o.release();
    }
    return *this;
}

} // namespace metaroce::udp
