// The ibv_modify_qp state machine of the IB specification (10.3), as a real provider
// checks it: which transitions exist and, per transport, which attributes a
// transition requires and which it accepts. Pure: unit-tested on its own.
#pragma once

#include <cstdint>

#include "verbs/abi.hpp"

namespace metaroce::verbs {

struct transition_rule {
    bool valid = false;
    int required = 0;  // ibv_qp_attr_mask bits that must be set
    int optional = 0;  // bits that may be set besides the required ones
};

// The rule for cur -> next on a QP of type `type` (RC, UC, UD). IBV_QP_STATE itself
// is not part of required/optional.
transition_rule qp_transition(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next) noexcept;

// 0 if `mask` (with IBV_QP_STATE meaning "next = attr.qp_state", else next = cur) is
// acceptable from `cur` for this QP type, else EINVAL. Checks values too: port 1,
// pkey index 0, retry/rnr counts <= 7, timeout <= 31, cur_qp_state == cur, path MTU
// within `max_mtu`, RD atomics within `max_rd_atomic`.
int check_modify(ibv_qp_type type, ibv_qp_state cur, const ibv_qp_attr& attr, int mask,
                 ibv_mtu max_mtu, uint8_t max_rd_atomic) noexcept;

} // namespace metaroce::verbs
