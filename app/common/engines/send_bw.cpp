// send_bw: SENDs of the pattern; the passive side keeps receives posted in the same
// slots (message i lands where it was sent from) and checks lengths and bytes.
#include "engines/bw_stream.hpp"
#include "engines/ctrl_msg.hpp"
#include "engines/engine_makers.hpp"

namespace metaroce::engines {

namespace {

class send_bw_active final : public bw_stream {
public:
    send_bw_active() noexcept : bw_stream(test_kind::send_bw, wr_opcode::send) {}
};

class send_bw_passive final : public bw_sink {
public:
    send_bw_passive() noexcept : bw_sink(test_kind::send_bw) {}
    void pump(uint64_t) override { keep_receives(k_request_stream); }

private:
    bool prepare() override
    {
        bw_sink::prepare();
        keep_receives(k_request_stream);
        return true;
    }
    void on_recv_done(size_t, uint64_t, const completion& c, uint64_t) override
    {
        ++result_.iterations;
        result_.bytes += c.byte_len;
        result_.bad_lengths += c.byte_len != s_.size;
        keep_receives(k_request_stream);
    }
};

} // namespace

std::unique_ptr<engine> make_send_bw(role r)
{
    return make_side<send_bw_active, send_bw_passive>(r);
}

} // namespace metaroce::engines
