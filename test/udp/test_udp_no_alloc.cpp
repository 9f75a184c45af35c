// The datapath rule "no heap allocation per packet" for the UDP backend: every global
// allocation made inside node::poll() during a steady verified WRITE between two nodes
// is counted, and must be zero.
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "udp_test_util.hpp"

namespace {
bool g_counting = false;
size_t g_allocations = 0;

void* counted_alloc(std::size_t n, std::size_t align) noexcept
{
    g_allocations += g_counting ? 1 : 0;
    n = n == 0 ? 1 : n;
    return align <= alignof(std::max_align_t) ? std::malloc(n)
                                              : std::aligned_alloc(align, (n + align - 1) / align * align);
}
void* counted_or_throw(std::size_t n, std::size_t align)
{
    if (void* p = counted_alloc(n, align)) {
        return p;
    }
    throw std::bad_alloc();
}
} // namespace

// Every form replaced, so each new pairs with a delete on malloc/free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) { return counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_or_throw(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, std::size_t(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_alloc(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_alloc(n, std::size_t(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace metaroce;
using namespace metaroce::udp;
using namespace metaroce::udp::test;

TEST_CASE("UDP: node::poll() does not allocate during a lossy WRITE", "[udp][alloc]")
{
    node_params pa = params({lo(77, 7, 1), lo(77, 7, 3)});
    node_params pb = params({lo(77, 7, 2), lo(77, 7, 4)});
    pa.test_drop_rate = pb.test_drop_rate = 0.01; // retransmits and SACKs too
    node a(pa);
    node b(pb);
    const conn_id c = a.ep().connect(pb.plane_addrs[0], node::now_ns());
    constexpr size_t k_len = 16 << 20;
    region src(a.ep(), k_len, 3);
    region dst(b.ep(), k_len, 0);
    std::array<completion, 64> wc;
    size_t done = 0;
    auto write_all = [&](bool count) {
        const size_t want = done + k_len / (1 << 20);
        for (size_t off = 0; off < k_len; off += 1 << 20) {
            send_wr wr;
            wr.wr_id = off;
            wr.local = sge{src.mr.va + off, 1 << 20, src.mr.lkey};
            wr.remote_va = dst.mr.va + off;
            wr.rkey = dst.mr.rkey;
            REQUIRE(a.ep().post_send(c, wr, node::now_ns()) == post_result::ok);
        }
        const uint64_t end = node::now_ns() + 20'000'000'000ull;
        while (done < want && node::now_ns() < end) {
            const uint64_t now = node::now_ns();
            g_counting = count;
            a.poll(now);
            b.poll(now);
            g_counting = false;
            for (size_t i = 0, n = a.ep().poll_cq(wc); i < n; ++i) {
                REQUIRE(wc[i].status == wc_status::success);
                ++done;
            }
            conn_event ev[8];
            while (b.ep().poll_events(ev) > 0) {
            }
        }
        REQUIRE(done == want);
    };
    write_all(false); // warm up: handshake, source-port sockets bound
    g_allocations = 0;
    write_all(true);
    CHECK(g_allocations == 0);
    CHECK(dst.differ(0, k_len, 3) == 0);
    CHECK(b.counters().rx_injected_drops > 0);
}
