// The two sides of the bandwidth tests, which differ in little but the opcode.
//  bw_stream (active): keeps `depth` requests in flight on every connection, message i
//    from slot i % slots of the area to the same slot of the peer's; the slots hold the
//    pattern.
//  bw_sink (passive): the slots are cleared at start and checked at the end, as far as
//    the peer's busiest connection got.
#pragma once

#include "engines/engine.hpp"

namespace metaroce::engines {

class bw_stream : public engine {
public:
    bw_stream(test_kind t, wr_opcode op) noexcept : engine(t, role::active), op_(op) {}
    void pump(uint64_t now_ns) override;

protected:
    bool prepare() override;

private:
    wr_opcode op_;
};

class bw_sink : public engine {
public:
    explicit bw_sink(test_kind t) noexcept : engine(t, role::passive) {}
    void pump(uint64_t) override {}

protected:
    bool prepare() override;
    void check(uint64_t peer_busiest) override;
};

// The engine of one side: Active or Passive.
template <typename Active, typename Passive>
std::unique_ptr<engine> make_side(role r)
{
    if (r == role::active) {
        return std::make_unique<Active>();
    }
    return std::make_unique<Passive>();
}

} // namespace metaroce::engines
