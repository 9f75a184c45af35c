// Guarded memory of one fuzzed endpoint (see fuzz_world.hpp).
#include <algorithm>
#include <cstring>

#include "fuzz_world.hpp"

namespace metaroce::fuzz {

namespace {

constexpr size_t k_guard = 64;
constexpr uint32_t k_recv_gap = 32; // guard bytes between receive buffers, inside r_recv
constexpr uint32_t k_recv_len = 160;

struct region_spec {
    const char* name;
    uint32_t len;
    uint32_t access;
};
constexpr uint32_t k_rw = access::local_write | access::remote_write | access::remote_read;
constexpr region_spec k_specs[k_regions] = {
    {"rw", 1024, k_rw},
    {"read-only", 512, access::remote_read},
    {"private", 1536, access::local_write},
    {"write-only", 512, access::remote_write},
    {"small", 128, k_rw},
    {"recv", k_recv_bufs * (k_recv_gap + k_recv_len) + k_recv_gap, access::local_write},
};

// Peers see side s's arena at this base, so packets do not carry heap addresses.
uint64_t va_base(int side) { return 0x10000000ull * uint64_t(side + 1); }

} // namespace

side_memory::side_memory(endpoint& e, int side) : ep_(e), side_(side)
{
    size_t off = k_guard;
    for (int r = 0; r < k_regions; ++r) {
        off_[r] = off;
        off += k_specs[r].len + k_guard;
    }
    bytes_.resize(off);
    uint64_t x = 0x9e3779b97f4a7c15ull * uint64_t(side + 1);
    for (uint8_t& b : bytes_) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b = uint8_t(x);
    }
    shadow_ = bytes_;
    for (int r = 0; r < k_regions; ++r) {
        auto mr = ep_.memory().register_region(bytes_.data() + off_[r], va_base(side) + off_[r],
                                               k_specs[r].len, k_specs[r].access);
        if (!mr) {
            fail("setup: registering region %s failed", k_specs[r].name);
        }
        mr_[r] = *mr;
        live_[r] = true;
    }
    rebuild_mask();
}

uint64_t side_memory::recv_va(int i) const
{
    return mr_[r_recv].va + k_recv_gap + uint64_t(i % k_recv_bufs) * (k_recv_gap + k_recv_len);
}

uint32_t side_memory::recv_len() const { return k_recv_len; }

size_t side_memory::offset_of(uint64_t va) const { return size_t(va - va_base(side_)); }

bool side_memory::deregister(int r)
{
    if (!live_[r]) {
        return false;
    }
    check("before deregister");
    live_[r] = false;
    const bool ok = ep_.memory().deregister(mr_[r].lkey);
    rebuild_mask();
    return ok;
}

void side_memory::open_range(uint64_t wr_id, uint64_t va, uint32_t len)
{
    check("before posting");
    const size_t b = offset_of(va);
    if (b > bytes_.size() || len > bytes_.size() - b) {
        fail("side %d: engine accepted a local range outside every region (va 0x%llx len %u)",
             side_, (unsigned long long)va, len);
    }
    open_[wr_id] = {b, b + len};
    rebuild_mask();
}

void side_memory::close_range(uint64_t wr_id)
{
    if (open_.erase(wr_id) > 0) {
        rebuild_mask();
    }
}

bool side_memory::peer_readable(std::span<const uint8_t> b) const
{
    for (int r = 0; r < k_regions; ++r) {
        if (!live_[r] || (k_specs[r].access & access::remote_read) == 0) {
            continue;
        }
        const auto first = bytes_.begin() + ptrdiff_t(off_[r]);
        const auto last = first + k_specs[r].len;
        if (std::search(first, last, b.begin(), b.end()) != last) {
            return true;
        }
    }
    return false;
}

void side_memory::rebuild_mask()
{
    writable_.assign(bytes_.size(), 0);
    for (int r = 0; r < k_regions; ++r) {
        if (live_[r] && (k_specs[r].access & access::remote_write) != 0) {
            std::fill_n(writable_.begin() + ptrdiff_t(off_[r]), k_specs[r].len, 1);
        }
    }
    for (const auto& [id, range] : open_) {
        std::fill(writable_.begin() + ptrdiff_t(range.first), writable_.begin() + ptrdiff_t(range.second), 1);
    }
}

void side_memory::check(const char* when)
{
    if (std::memcmp(bytes_.data(), shadow_.data(), bytes_.size()) == 0) {
        return; // the common case, kept cheap: this runs after every operation
    }
    const uint8_t* now = bytes_.data();
    uint8_t* was = shadow_.data();
    const uint8_t* may = writable_.data();
    for (size_t i = 0; i < bytes_.size(); ++i) {
        if (now[i] == was[i]) {
            continue;
        }
        if (may[i] == 0) {
            const char* where = "a guard area";
            const char* note = "";
            size_t rel = i;
            for (int r = 0; r < k_regions; ++r) {
                if (i >= off_[r] && i < off_[r] + k_specs[r].len) {
                    where = k_specs[r].name;
                    rel = i - off_[r];
                    note = !live_[r] ? " (deregistered)"
                           : r == r_recv ? " (outside every posted receive)"
                           : (k_specs[r].access & access::remote_write) == 0 ? " (no remote_write)"
                                                                            : "";
                    break;
                }
            }
            fail("side %d (%s): byte %zu of region %s%s changed (0x%02x -> 0x%02x), arena offset %zu",
                 side_, when, rel, where, note, shadow_[i], bytes_[i], i);
        }
        was[i] = now[i];
    }
}

} // namespace metaroce::fuzz
