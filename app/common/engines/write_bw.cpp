// write_bw: WRITEs of the pattern into the peer's slots; the passive side checks the
// slots it was written.
#include "engines/bw_stream.hpp"
#include "engines/engine_makers.hpp"

namespace metaroce::engines {

namespace {

class write_bw_active final : public bw_stream {
public:
    write_bw_active() noexcept : bw_stream(test_kind::write_bw, wr_opcode::write) {}
};

class write_bw_passive final : public bw_sink {
public:
    write_bw_passive() noexcept : bw_sink(test_kind::write_bw) {}
};

} // namespace

std::unique_ptr<engine> make_write_bw(role r)
{
    return make_side<write_bw_active, write_bw_passive>(r);
}

} // namespace metaroce::engines
