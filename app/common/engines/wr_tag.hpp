// The one wr_id layout of both programs: kind (8 bits) | index (16) | sequence (40).
// The host routes a completion by its kind; the engine reads index and sequence.
#pragma once

#include <cstdint>

namespace metaroce::engines {

enum class wr_kind : uint8_t {
    ctrl_recv = 1, // control channel; sequence = buffer slot
    ctrl_send,
    active_send,   // an engine's requests and receives; index = the connection's place
    active_recv,   // in the engine, sequence = the iteration
    passive_send,
    passive_recv,
    user,          // posted by hand (the app's prompt); sequence = the user's wr_id
};

inline constexpr uint64_t k_seq_mask = (1ull << 40) - 1;

struct wr_tag {
    wr_kind kind{};
    uint16_t index = 0;
    uint64_t seq = 0;

    constexpr uint64_t id() const noexcept
    {
        return uint64_t(kind) << 56 | uint64_t(index) << 40 | (seq & k_seq_mask);
    }
    static constexpr wr_tag of(uint64_t id) noexcept
    {
        return wr_tag{wr_kind(id >> 56), uint16_t(id >> 40), id & k_seq_mask};
    }
};

constexpr bool is_active(wr_kind k) noexcept
{
    return k == wr_kind::active_send || k == wr_kind::active_recv;
}
constexpr bool is_passive(wr_kind k) noexcept
{
    return k == wr_kind::passive_send || k == wr_kind::passive_recv;
}
constexpr bool is_ctrl(wr_kind k) noexcept
{
    return k == wr_kind::ctrl_recv || k == wr_kind::ctrl_send;
}

} // namespace metaroce::engines
