// The datapath rule "no heap allocation per packet", checked: every global allocation
// made inside an endpoint call during a steady lossy transfer is counted, and must be zero.
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include "metaroce/endpoint.hpp"

namespace {
bool g_counting = false;
size_t g_allocations = 0;
} // namespace

// We replace every form of the global allocator (plain, array, nothrow, aligned) so each
// allocation is counted and every new pairs with its delete on malloc/free; a form left
// to the runtime would be freed here (ASan reports that as alloc-dealloc-mismatch).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
void* counted_alloc(std::size_t n, std::size_t align) noexcept
{
    if (g_counting) {
        ++g_allocations;
    }
    n = n == 0 ? 1 : n;
    if (align <= alignof(std::max_align_t)) {
        return std::malloc(n);
    }
    return std::aligned_alloc(align, (n + align - 1) / align * align);
}
void* counted_or_throw(std::size_t n, std::size_t align)
{
    if (void* p = counted_alloc(n, align)) {
        return p;
    }
    throw std::bad_alloc();
}
} // namespace

void* operator new(std::size_t n) { return counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_or_throw(n, 0); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, std::size_t(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, std::size_t(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept
{
    return counted_alloc(n, std::size_t(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept
{
    return counted_alloc(n, std::size_t(a));
}
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

namespace {

// Counts allocations made by whatever runs inside.
template <typename F>
auto counted(F&& f)
{
    g_counting = true;
    auto r = f();
    g_counting = false;
    return r;
}

struct wire_packet {
    uint64_t at = 0;
    int to = 0;
    rx_meta meta;
    size_t len = 0;
    std::array<uint8_t, 4500> bytes{};
};

} // namespace

TEST_CASE("no heap allocation inside the engine once connections are up", "[datapath]")
{
    // The counter itself works: one allocation inside counted() is seen.
    // (An explicit operator new call, which unlike a new-expression cannot be elided.)
    void* probe = counted([] { return ::operator new(64); });
    ::operator delete(probe);
    REQUIRE(g_allocations == 1);
    g_allocations = 0;

    transport_config t;
    t.paths = 8;
    t.planes = 2;
    endpoint_config ca;
    ca.local_addr = 1;
    ca.transport = t;
    endpoint_config cb = ca;
    cb.local_addr = 2;
    endpoint a(ca), b(cb);
    endpoint* ep[2] = {&a, &b};

    std::vector<uint8_t> src(8 << 20), dst(8 << 20);
    for (size_t i = 0; i < src.size(); ++i) {
        src[i] = uint8_t(i * 13 + 1);
    }
    const auto smr = *a.memory().register_region(src.data(), src.size(), access::local_write);
    const auto dmr = *b.memory().register_region(dst.data(), dst.size(), access::remote_write);
    const conn_id c = a.connect(2, 0);

    // A fixed pool of packets on the wire; 1 % of them dropped, deterministically.
    std::vector<wire_packet> pool(4096);
    std::vector<size_t> in_flight;
    in_flight.reserve(pool.size());
    std::vector<size_t> free_list;
    for (size_t i = 0; i < pool.size(); ++i) {
        free_list.push_back(pool.size() - 1 - i);
    }
    std::array<completion, 64> wc{};
    uint64_t now = 0, sent = 0, done = 0, posted = 0;
    const uint64_t msgs = 64, msg_bytes = src.size() / msgs;
    bool steady = false;

    for (int iter = 0; iter < 2'000'000 && done < msgs; ++iter) {
        // Start counting once the handshake (which allocates the connection) is done.
        steady = steady || a.inspect(c)->state == conn_state::established;
        while (steady && posted < msgs && posted - done < 8) {
            send_wr wr;
            wr.wr_id = posted;
            wr.local = {smr.va + posted * msg_bytes, uint32_t(msg_bytes), smr.lkey};
            wr.remote_va = dmr.va + posted * msg_bytes;
            wr.rkey = dmr.rkey;
            REQUIRE(counted([&] { return a.post_send(c, wr, now); }) == post_result::ok);
            ++posted;
        }
        for (int s = 0; s < 2; ++s) {
            for (;;) {
                REQUIRE(!free_list.empty());
                wire_packet& p = pool[free_list.back()];
                tx_frame f;
                f.buf = p.bytes;
                const bool got = steady ? counted([&] { return ep[s]->poll_tx(now, f); })
                                        : ep[s]->poll_tx(now, f);
                if (!got) {
                    break;
                }
                if (++sent % 100 == 0) {
                    continue; // dropped
                }
                p.at = now + 2000;
                p.to = 1 - s;
                p.meta = {s == 0 ? 1u : 2u, f.plane, f.udp_sport, false};
                p.len = f.len;
                in_flight.push_back(free_list.back());
                free_list.pop_back();
            }
        }
        now += 500;
        for (size_t i = 0; i < in_flight.size();) {
            wire_packet& p = pool[in_flight[i]];
            if (p.at > now) {
                ++i;
                continue;
            }
            std::span<const uint8_t> bytes(p.bytes.data(), p.len);
            if (steady) {
                counted([&] {
                    ep[p.to]->on_packet(p.meta, bytes, now);
                    return 0;
                });
            } else {
                ep[p.to]->on_packet(p.meta, bytes, now);
            }
            free_list.push_back(in_flight[i]);
            in_flight[i] = in_flight.back();
            in_flight.pop_back();
        }
        for (endpoint* e : ep) {
            counted([&] {
                e->on_timer(now);
                return 0;
            });
        }
        done += counted([&] { return a.poll_cq(wc); });
    }
    REQUIRE(done == msgs);
    CHECK(src == dst);
    CHECK(a.stats().retransmits > 0);
    CHECK(g_allocations == 0);
}
