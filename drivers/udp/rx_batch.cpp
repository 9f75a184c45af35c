#include "udp/rx_batch.hpp"

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

namespace metaroce::udp {

rx_batch::rx_batch(size_t burst, size_t max_len, bool gro)
    : burst_(burst),
      max_len_(gro ? 65535 : max_len),
      data_(burst * max_len_),
      ctrl_(burst * k_cmsg_space),
      from_(burst),
      iov_(burst),
      msgs_(burst),
      ce_(burst),
      seg_(burst)
{
}

size_t rx_batch::recv(int fd, uint32_t& drops)
{
    for (size_t i = 0; i < burst_; ++i) {
        iov_[i] = iovec{data_.data() + i * max_len_, max_len_};
        msghdr& h = msgs_[i].msg_hdr;
        h = msghdr{};
        h.msg_name = &from_[i];
        h.msg_namelen = sizeof(sockaddr_in);
        h.msg_iov = &iov_[i];
        h.msg_iovlen = 1;
        h.msg_control = ctrl_.data() + i * k_cmsg_space;
        h.msg_controllen = k_cmsg_space;
        msgs_[i].msg_len = 0;
    }
    int n;
    do {
        n = recvmmsg(fd, msgs_.data(), unsigned(burst_), MSG_DONTWAIT, nullptr);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return 0; // EAGAIN; other errors (none expected on a bound UDP socket) look the same
    }
    for (int i = 0; i < n; ++i) {
        msghdr& h = msgs_[size_t(i)].msg_hdr;
        uint8_t tos = 0;
        int seg = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
                std::memcpy(&tos, CMSG_DATA(c), 1);
            } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                std::memcpy(&seg, CMSG_DATA(c), sizeof seg);
            } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
                std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
            }
        }
        ce_[size_t(i)] = (tos & 0x03) == 0x03;
        seg_[size_t(i)] = seg > 0 && size_t(seg) < msgs_[size_t(i)].msg_len ? uint16_t(seg) : 0;
    }
    return size_t(n);
}

rx_datagram rx_batch::at(size_t i) const noexcept
{
    const mmsghdr& m = msgs_[i];
    rx_datagram d;
    const size_t len = m.msg_len < max_len_ ? m.msg_len : max_len_;
    d.bytes = {data_.data() + i * max_len_, len};
    d.src_ip = ntohl(from_[i].sin_addr.s_addr);
    d.src_port = ntohs(from_[i].sin_port);
    d.ce = ce_[i] != 0;
    d.truncated = (m.msg_hdr.msg_flags & MSG_TRUNC) != 0;
    d.seg_size = seg_[i];
    return d;
}

} // namespace metaroce::udp
