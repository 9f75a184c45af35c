// read_bw: READs of the peer's slots, which hold the pattern; the active side checks
// what it read.
#include <cstring>

#include "engines/bw_stream.hpp"
#include "engines/data_pattern.hpp"
#include "engines/engine_makers.hpp"

namespace metaroce::engines {

namespace {

class read_bw_active final : public bw_stream {
public:
    read_bw_active() noexcept : bw_stream(test_kind::read_bw, wr_opcode::read) {}

private:
    bool prepare() override
    {
        std::memset(s_.area.host, 0, uint64_t(s_.slots) * s_.size);
        return true;
    }
    void check(uint64_t) override
    {
        compare(0, slot_bytes(busiest()), 0);
    }
};

class read_bw_passive final : public engine {
public:
    read_bw_passive() noexcept : engine(test_kind::read_bw, role::passive) {}
    void pump(uint64_t) override {}

private:
    bool prepare() override
    {
        fill_pattern(s_.area.host, uint64_t(s_.slots) * s_.size);
        return true;
    }
};

} // namespace

std::unique_ptr<engine> make_read_bw(role r)
{
    return make_side<read_bw_active, read_bw_passive>(r);
}

} // namespace metaroce::engines
