// Memory regions: keys, access rights, bounds, overflow, stale keys, capacity, reregistration.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "metaroce/memory_region.hpp"
#include "metaroce/verbs_types.hpp"

using namespace metaroce;

namespace {
constexpr uint32_t k_all = access::local_write | access::remote_write | access::remote_read;
}

TEST_CASE("lkey and rkey are distinct and not interchangeable", "[mr]")
{
    mr_table t(16);
    std::vector<uint8_t> buf(4096);
    const auto mr = t.register_region(buf.data(), 0x10000, buf.size(), k_all);
    REQUIRE(mr);
    CHECK(mr->lkey != mr->rkey);
    CHECK(mr->va == 0x10000);
    CHECK(mr->length == 4096);
    CHECK(mr->host == buf.data());
    uint8_t* host = nullptr;
    CHECK(t.check_local(mr->lkey, 0x10000, 16, 0, &host) == mr_check::ok);
    CHECK(host == buf.data());
    CHECK(t.check_remote(mr->rkey, 0x10010, 16, access::remote_write, &host) == mr_check::ok);
    CHECK(host == buf.data() + 0x10);
    CHECK(t.check_remote(mr->lkey, 0x10000, 16, 0, &host) == mr_check::bad_key);
    CHECK(t.check_local(mr->rkey, 0x10000, 16, 0, &host) == mr_check::bad_key);
    CHECK(t.find_by_lkey(mr->lkey) != nullptr);
    CHECK(t.find_by_lkey(mr->rkey) == nullptr);
    CHECK_FALSE(t.deregister(mr->rkey));
    CHECK(t.size() == 1);
    // Keys of two regions never resolve to each other.
    const auto mr2 = t.register_region(buf.data(), 0x20000, 100, k_all);
    REQUIRE(mr2);
    CHECK(t.check_remote(mr2->rkey, 0x10000, 1, 0, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(mr2->rkey, 0x20000, 1, 0, &host) == mr_check::ok);
    CHECK(t.check_remote(mr->rkey ^ 0x10000, 0x10000, 1, 0, &host) == mr_check::bad_key);
    CHECK(t.check_remote(0, 0x10000, 1, 0, &host) == mr_check::bad_key);
    CHECK(t.check_remote(0xffffffff, 0x10000, 1, 0, &host) == mr_check::bad_key);
}

TEST_CASE("access rights are enforced per right", "[mr]")
{
    mr_table t(16);
    std::vector<uint8_t> buf(64);
    uint8_t* host = nullptr;
    const uint32_t rights[] = {access::local_write, access::remote_write, access::remote_read};
    for (uint32_t have = 0; have < 8; ++have) {
        const auto mr = t.register_region(buf.data(), 0x1000, 64, have);
        REQUIRE(mr);
        for (uint32_t need : rights) {
            INFO("have " << have << " need " << need);
            const mr_check want = (have & need) ? mr_check::ok : mr_check::access_denied;
            CHECK(t.check_remote(mr->rkey, 0x1000, 8, need, &host) == want);
            CHECK(t.check_local(mr->lkey, 0x1000, 8, need, &host) == want);
        }
        CHECK(t.check_remote(mr->rkey, 0x1000, 8, access::remote_read | access::remote_write, &host) ==
              ((have & 6) == 6 ? mr_check::ok : mr_check::access_denied));
        CHECK(t.check_local(mr->lkey, 0x1000, 8, 0, &host) == mr_check::ok);
        REQUIRE(t.deregister(mr->lkey));
    }
}

TEST_CASE("bounds: inside, at the edges, zero length at the end, beyond", "[mr]")
{
    mr_table t(4);
    std::vector<uint8_t> buf(1000);
    const auto mr = t.register_region(buf.data(), 5000, 1000, k_all);
    REQUIRE(mr);
    uint8_t* host = nullptr;
    auto rc = [&](uint64_t va, uint64_t len) { return t.check_remote(mr->rkey, va, len, 0, &host); };
    CHECK(rc(5000, 1000) == mr_check::ok);
    CHECK(rc(5999, 1) == mr_check::ok);
    CHECK(host == buf.data() + 999);
    CHECK(rc(6000, 0) == mr_check::ok); // zero length at the very end
    CHECK(host == buf.data() + 1000);
    CHECK(rc(5000, 0) == mr_check::ok);
    CHECK(rc(6001, 0) == mr_check::out_of_bounds);
    CHECK(rc(5000, 1001) == mr_check::out_of_bounds);
    CHECK(rc(5999, 2) == mr_check::out_of_bounds);
    CHECK(rc(6000, 1) == mr_check::out_of_bounds);
    CHECK(rc(4999, 1) == mr_check::out_of_bounds);
    CHECK(rc(4999, 0) == mr_check::out_of_bounds);
    CHECK(rc(0, 6000) == mr_check::out_of_bounds);
}

TEST_CASE("overflow attempts are out of bounds, never wrapped", "[mr]")
{
    mr_table t(4);
    std::vector<uint8_t> buf(4096);
    uint8_t* host = nullptr;
    const auto mr = t.register_region(buf.data(), 0x1000, 4096, k_all);
    REQUIRE(mr);
    CHECK(t.check_remote(mr->rkey, 0x1000, UINT64_MAX, 0, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(mr->rkey, 0x1001, UINT64_MAX - 0x1000, 0, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(mr->rkey, UINT64_MAX, 2, 0, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(mr->rkey, UINT64_MAX - 10, 0x1000 + 20, 0, &host) == mr_check::out_of_bounds);
    // A region near the top of the address space.
    const uint64_t top = UINT64_MAX - 4095;
    const auto hi = t.register_region(buf.data(), top - 1, 4096, k_all);
    REQUIRE(hi);
    CHECK(t.check_remote(hi->rkey, top - 1, 4096, 0, &host) == mr_check::ok);
    CHECK(t.check_remote(hi->rkey, UINT64_MAX - 1, 1, 0, &host) == mr_check::ok);
    CHECK(t.check_remote(hi->rkey, UINT64_MAX - 1, 2, 0, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(hi->rkey, UINT64_MAX, 1, 0, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(hi->rkey, top, UINT64_MAX, 0, &host) == mr_check::out_of_bounds);
    // Registrations that would wrap, or are empty or null, are refused.
    CHECK_FALSE(t.register_region(buf.data(), UINT64_MAX - 10, 4096, k_all));
    CHECK_FALSE(t.register_region(buf.data(), 1, UINT64_MAX, k_all));
    CHECK_FALSE(t.register_region(buf.data(), 0x1000, 0, k_all));
    CHECK_FALSE(t.register_region(nullptr, 0x1000, 16, k_all));
    CHECK(t.size() == 2);
}

TEST_CASE("a key is dead after deregister, even when the slot is reused", "[mr]")
{
    mr_table t(1);
    std::vector<uint8_t> buf(64);
    uint8_t* host = nullptr;
    const auto a = t.register_region(buf.data(), 0x1000, 64, k_all);
    REQUIRE(a);
    REQUIRE(t.deregister(a->lkey));
    CHECK(t.size() == 0);
    CHECK_FALSE(t.deregister(a->lkey));
    CHECK(t.check_remote(a->rkey, 0x1000, 8, 0, &host) == mr_check::bad_key);
    CHECK(t.check_local(a->lkey, 0x1000, 8, 0, &host) == mr_check::bad_key);
    // Same slot (capacity 1), same address: new keys, old ones still dead.
    const auto b = t.register_region(buf.data(), 0x1000, 64, k_all);
    REQUIRE(b);
    CHECK(b->lkey != a->lkey);
    CHECK(b->rkey != a->rkey);
    CHECK(t.check_remote(a->rkey, 0x1000, 8, 0, &host) == mr_check::bad_key);
    CHECK(t.check_local(a->lkey, 0x1000, 8, 0, &host) == mr_check::bad_key);
    CHECK_FALSE(t.deregister(a->lkey));
    CHECK(t.check_remote(b->rkey, 0x1000, 8, 0, &host) == mr_check::ok);
    // Many reuses of one slot (more than an 8-bit generation counts) never bring an
    // old key back to life.
    std::vector<uint32_t> old_rkeys{a->rkey};
    uint32_t cur = b->lkey;
    for (int i = 0; i < 600; ++i) {
        old_rkeys.push_back(t.find_by_lkey(cur)->rkey);
        REQUIRE(t.deregister(cur));
        const auto n = t.register_region(buf.data(), 0x1000, 64, k_all);
        REQUIRE(n);
        for (uint32_t k : old_rkeys) {
            REQUIRE(t.check_remote(k, 0x1000, 8, 0, &host) == mr_check::bad_key);
        }
        cur = n->lkey;
    }
}

TEST_CASE("the table refuses registrations when full", "[mr]")
{
    mr_table t(3);
    std::vector<uint8_t> buf(64);
    std::vector<memory_region> mrs;
    for (int i = 0; i < 3; ++i) {
        auto m = t.register_region(buf.data(), 0x1000, 64, k_all);
        REQUIRE(m);
        mrs.push_back(*m);
    }
    CHECK(t.size() == 3);
    CHECK_FALSE(t.register_region(buf.data(), 0x1000, 64, k_all));
    REQUIRE(t.deregister(mrs[1].lkey));
    CHECK(t.register_region(buf.data(), 0x1000, 64, k_all));
    CHECK_FALSE(t.register_region(buf.data(), 0x1000, 64, k_all));
    // Keys from different tables (different seeds) do not match by accident.
    mr_table other(3, 99);
    auto o = other.register_region(buf.data(), 0x1000, 64, k_all);
    REQUIRE(o);
    uint8_t* host = nullptr;
    CHECK(t.check_remote(o->rkey, 0x1000, 8, 0, &host) == mr_check::bad_key);
}

TEST_CASE("the epoch moves on every deregistration, skips 0 and calls the wrap hook", "[mr]")
{
    int wraps = 0;
    mr_table t(4, 1, [](void* n) { ++*static_cast<int*>(n); }, &wraps);
    std::vector<uint8_t> buf(256);
    const uint16_t first = t.epoch();
    CHECK(first != 0);
    const auto keep = t.register_region(buf.data(), 0x1000, buf.size(), k_all);
    REQUIRE(keep);
    CHECK(t.epoch() == first); // a new region leaves every checked range valid
    CHECK(t.host_at(keep->rkey, 0x1010) == buf.data() + 0x10);
    CHECK(t.host_at(keep->lkey, 0x1000) == buf.data());
    uint16_t last = t.epoch();
    for (uint32_t i = 0; i < 70000; ++i) {
        const auto mr = t.register_region(buf.data(), 64, k_all);
        REQUIRE(mr);
        REQUIRE(t.deregister(mr->lkey));
        REQUIRE(t.epoch() != last);
        REQUIRE(t.epoch() != 0);
        last = t.epoch();
    }
    CHECK(wraps == 1); // 65,535 values: one wrap in 70,000
    CHECK_FALSE(t.deregister(0x12345678));
    CHECK(t.epoch() == last); // a refused deregistration changes nothing
}

TEST_CASE("reregistration keeps both keys and moves translation and rights together", "[mr]")
{
    mr_table t(4);
    std::vector<uint8_t> old_buf(256), new_buf(512);
    const auto mr = t.register_region(old_buf.data(), 0x1000, old_buf.size(), k_all);
    REQUIRE(mr);
    const uint16_t before = t.epoch();
    uint8_t* host = nullptr;

    // New rights only: same memory, remote write gone, the epoch moves (cached checks redo).
    REQUIRE(t.reregister(mr->lkey, old_buf.data(), 0x1000, old_buf.size(), access::local_write | access::remote_read));
    CHECK(t.epoch() != before);
    CHECK(t.check_remote(mr->rkey, 0x1000, 8, access::remote_write, &host) == mr_check::access_denied);
    CHECK(t.check_remote(mr->rkey, 0x1000, 8, access::remote_read, &host) == mr_check::ok);
    CHECK(host == old_buf.data());

    // New translation: the same rkey reaches the new memory; the old range is out of bounds.
    const uint16_t mid = t.epoch();
    REQUIRE(t.reregister(mr->lkey, new_buf.data(), 0x8000, new_buf.size(), k_all));
    CHECK(t.epoch() != mid);
    CHECK(t.check_remote(mr->rkey, 0x1000, 8, access::remote_write, &host) == mr_check::out_of_bounds);
    CHECK(t.check_remote(mr->rkey, 0x8000 + 500, 12, access::remote_write, &host) == mr_check::ok);
    CHECK(host == new_buf.data() + 500);
    CHECK(t.check_local(mr->lkey, 0x8000, 512, access::local_write, &host) == mr_check::ok);
    CHECK(t.check_local(mr->lkey, 0x8000, 513, access::local_write, &host) == mr_check::out_of_bounds);
    CHECK(t.find_by_lkey(mr->lkey)->rkey == mr->rkey);

    // Refused: unknown or remote key, zero length, a wrapping range. Nothing changes.
    const uint16_t last = t.epoch();
    CHECK_FALSE(t.reregister(0x12345678, new_buf.data(), 0x8000, 16, k_all));
    CHECK_FALSE(t.reregister(mr->rkey, new_buf.data(), 0x8000, 16, k_all));
    CHECK_FALSE(t.reregister(mr->lkey, new_buf.data(), 0x8000, 0, k_all));
    CHECK_FALSE(t.reregister(mr->lkey, new_buf.data(), UINT64_MAX - 8, 16, k_all));
    CHECK(t.epoch() == last);
    CHECK(t.check_remote(mr->rkey, 0x8000, 512, access::remote_write, &host) == mr_check::ok);

    // A deregistered key cannot be reregistered.
    REQUIRE(t.deregister(mr->lkey));
    CHECK_FALSE(t.reregister(mr->lkey, old_buf.data(), 0x1000, 16, k_all));
}
