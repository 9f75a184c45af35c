#include "metaroce/wire/codec.hpp"

#include <cstring>

namespace metaroce::wire {

namespace {

using detail::make_bth;
using detail::store;

// Writes BTH + one fixed header; used by every non-data packet.
template <typename H>
size_t build_fixed(std::span<uint8_t> out, const bth_fields& b, const H& ext) noexcept
{
    if (out.size() < sizeof(bth) + sizeof(H)) {
        return 0;
    }
    store(out.data(), make_bth(b));
    store(out.data() + sizeof(bth), ext);
    return sizeof(bth) + sizeof(H);
}

} // namespace

std::string_view to_string(parse_error e) noexcept
{
    switch (e) {
    case parse_error::none: return "none";
    case parse_error::too_short: return "too_short";
    case parse_error::bad_version: return "bad_version";
    case parse_error::unknown_opcode: return "unknown_opcode";
    case parse_error::unknown_flags: return "unknown_flags";
    case parse_error::trailing_bytes: return "trailing_bytes";
    case parse_error::payload_overrun: return "payload_overrun";
    case parse_error::empty_payload: return "empty_payload";
    case parse_error::count_: break;
    }
    return "?";
}

size_t build_data(std::span<uint8_t> out, const bth_fields& b, const msg_fields& m,
                  std::span<const uint8_t> payload) noexcept
{
    const size_t hdr = build_data_headers(out, b, m, payload.size());
    if (hdr == 0) {
        return 0;
    }
    if (!payload.empty()) {
        std::memcpy(out.data() + hdr, payload.data(), payload.size());
    }
    return hdr + payload.size();
}

size_t build_nak(std::span<uint8_t> out, const bth_fields& b, const nak_header& n) noexcept
{
    return build_fixed(out, b, n);
}
size_t build_hello(std::span<uint8_t> out, const bth_fields& b, const hello_header& h) noexcept
{
    return build_fixed(out, b, h);
}
size_t build_close(std::span<uint8_t> out, const bth_fields& b, const close_header& c) noexcept
{
    return build_fixed(out, b, c);
}
size_t build_probe(std::span<uint8_t> out, const bth_fields& b, const probe_header& p) noexcept
{
    return build_fixed(out, b, p);
}
size_t build_cookie(std::span<uint8_t> out, const bth_fields& b, const cookie_header& c) noexcept
{
    return build_fixed(out, b, c);
}

} // namespace metaroce::wire
