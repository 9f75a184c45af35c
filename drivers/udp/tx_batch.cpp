#include "udp/tx_batch.hpp"

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

namespace metaroce::udp {

tx_batch::tx_batch(size_t capacity, size_t max_len, bool gso)
    : gso_(gso),
      cap_(capacity),
      max_len_(max_len),
      data_(capacity * max_len),
      ctrl_(capacity * k_cmsg_space),
      entries_(capacity),
      order_(capacity),
      iov_(capacity),
      msgs_(capacity),
      group_(capacity),
      done_(capacity),
      msg_first_(capacity),
      msg_segs_(capacity)
{
    for (size_t i = 0; i < capacity; ++i) {
        order_[i] = uint16_t(i);
    }
}

std::span<uint8_t> tx_batch::next_buffer() noexcept
{
    if (n_ == cap_) {
        return {};
    }
    return {data_.data() + size_t(order_[n_]) * max_len_, max_len_};
}

void tx_batch::commit(int fd, uint32_t dst_ip, uint16_t dst_port, size_t len, bool ect) noexcept
{
    entry& e = entries_[order_[n_]];
    e.fd = fd;
    e.len = uint32_t(len);
    e.ect = ect;
    e.dst = sockaddr_in{};
    e.dst.sin_family = AF_INET;
    e.dst.sin_port = htons(dst_port);
    e.dst.sin_addr.s_addr = htonl(dst_ip);
    ++n_;
}

// One sendmsg: segments [first, first+segs) of the socket's group, contiguous in iov_.
// With GSO, equal-length datagrams to one destination go as one UDP_SEGMENT send (the
// kernel or the NIC cuts them apart: on the wire they are the same datagrams).
void tx_batch::build_msg(size_t m, size_t first, size_t segs, const entry& e, uint8_t* cbuf) noexcept
{
    msghdr& h = msgs_[m].msg_hdr;
    h = msghdr{};
    h.msg_name = const_cast<sockaddr_in*>(&e.dst);
    h.msg_namelen = sizeof e.dst;
    h.msg_iov = &iov_[first];
    h.msg_iovlen = segs;
    size_t clen = 0;
    if (segs > 1 || !e.ect) {
        std::memset(cbuf, 0, k_cmsg_space);
        h.msg_control = cbuf;
        h.msg_controllen = k_cmsg_space;
        cmsghdr* cm = CMSG_FIRSTHDR(&h);
        if (segs > 1) {
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            const uint16_t seg = uint16_t(iov_[first].iov_len);
            std::memcpy(CMSG_DATA(cm), &seg, sizeof seg);
            clen += CMSG_SPACE(sizeof(uint16_t));
            cm = CMSG_NXTHDR(&h, cm);
        }
        if (!e.ect) { // the socket marks ECT(0); this one goes out Not-ECT
            cm->cmsg_level = IPPROTO_IP;
            cm->cmsg_type = IP_TOS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            const int tos = 0;
            std::memcpy(CMSG_DATA(cm), &tos, sizeof tos);
            clen += CMSG_SPACE(sizeof(int));
        }
        h.msg_controllen = clen;
    }
}

size_t tx_batch::flush(udp_counters& c) noexcept
{
    std::fill(done_.begin(), done_.begin() + long(n_), uint8_t(0));
    for (size_t i = 0; i < n_; ++i) {
        if (done_[i] != 0) {
            continue;
        }
        // Every queued datagram of this socket, in order: iov_[0, g) and group_[0, g).
        const int fd = entries_[order_[i]].fd;
        size_t g = 0;
        for (size_t j = i; j < n_; ++j) {
            const uint16_t k = order_[j];
            if (done_[j] == 0 && entries_[k].fd == fd) {
                iov_[g] = iovec{data_.data() + size_t(k) * max_len_, entries_[k].len};
                group_[g++] = uint16_t(j);
            }
        }
        // Messages: runs that may share one GSO send, else one datagram each.
        size_t m = 0;
        for (size_t a = 0; a < g;) {
            const entry& e = entries_[order_[group_[a]]];
            size_t b = a + 1;
            size_t bytes = e.len;
            while (gso_ && b < g && b - a < k_max_segs && iov_[b - 1].iov_len == e.len) {
                const entry& x = entries_[order_[group_[b]]];
                if (x.len > e.len || bytes + x.len > k_max_gso_bytes || x.ect != e.ect ||
                    x.dst.sin_addr.s_addr != e.dst.sin_addr.s_addr || x.dst.sin_port != e.dst.sin_port) {
                    break;
                }
                bytes += x.len;
                ++b;
            }
            build_msg(m, a, b - a, e, ctrl_.data() + m * k_cmsg_space);
            msg_first_[m] = uint16_t(a);
            msg_segs_[m] = uint16_t(b - a);
            ++m;
            a = b;
        }
        size_t k = 0;
        while (k < m) {
            const int r = sendmmsg(fd, msgs_.data() + k, unsigned(m - k), 0);
            ++c.tx_syscalls;
            if (r > 0) {
                for (size_t s = k; s < k + size_t(r); ++s) {
                    for (size_t q = msg_first_[s]; q < size_t(msg_first_[s] + msg_segs_[s]); ++q) {
                        done_[group_[q]] = 1;
                        c.tx_bytes += iov_[q].iov_len;
                    }
                    c.tx_datagrams += msg_segs_[s];
                    c.tx_gso_sends += msg_segs_[s] > 1 ? 1 : 0;
                }
                k += size_t(r);
            } else if (errno == EINTR) {
                continue;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
                ++c.tx_would_block;
                break; // the rest of this socket waits for the next flush
            } else if (msg_segs_[k] > 1 && (errno == EIO || errno == EINVAL || errno == ENOPROTOOPT)) {
                gso_ = false; // the kernel or device cannot segment: send one by one from now on
                ++c.tx_gso_disabled;
                break;        // these wait for the next flush
            } else {
                ++c.tx_errors; // refused outright (no route, ...): lost, as on a dead link
                for (size_t q = msg_first_[k]; q < size_t(msg_first_[k] + msg_segs_[k]); ++q) {
                    done_[group_[q]] = 1;
                }
                ++k;
            }
        }
    }
    // Keep what is left, in order; the sent entries' buffers become free.
    size_t kept = 0;
    size_t freed = 0;
    std::vector<uint16_t>& o = order_;
    uint16_t* tmp = group_.data(); // free list, built here
    for (size_t i = 0; i < n_; ++i) {
        if (done_[i] == 0) {
            o[kept++] = o[i];
        } else {
            tmp[freed++] = o[i];
        }
    }
    for (size_t i = 0; i < freed; ++i) {
        o[kept + i] = tmp[i];
    }
    n_ = kept;
    return n_;
}

} // namespace metaroce::udp
