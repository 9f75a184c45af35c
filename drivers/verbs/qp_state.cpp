#include "verbs/qp_state.hpp"

#include <cerrno>

namespace metaroce::verbs {
namespace {

constexpr int k_path_opts = IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;

transition_rule rc_uc_rule(bool rc, ibv_qp_state cur, ibv_qp_state next) noexcept
{
    // UC has no timeout/retries, no RD atomics and no RNR timer.
    const int rtr_req = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0);
    const int rts_req = IBV_QP_SQ_PSN |
                        (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_MAX_QP_RD_ATOMIC
                            : 0);
    const int rnr = rc ? IBV_QP_MIN_RNR_TIMER : 0;
    switch (cur) {
    case IBV_QPS_RESET:
        if (next == IBV_QPS_INIT) {
            return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
        }
        break;
    case IBV_QPS_INIT:
        if (next == IBV_QPS_INIT) {
            return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
        }
        if (next == IBV_QPS_RTR) {
            return {true, rtr_req, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
        }
        break;
    case IBV_QPS_RTR:
        if (next == IBV_QPS_RTS) {
            return {true, rts_req,
                    IBV_QP_CUR_STATE | k_path_opts | IBV_QP_ACCESS_FLAGS | rnr};
        }
        break;
    case IBV_QPS_RTS:
        if (next == IBV_QPS_RTS) {
            return {true, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | k_path_opts | rnr};
        }
        if (next == IBV_QPS_SQD) {
            return {true, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY};
        }
        break;
    case IBV_QPS_SQD:
        if (next == IBV_QPS_RTS) {
            return {true, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | k_path_opts | rnr};
        }
        if (next == IBV_QPS_SQD) {
            return {true, 0,
                    IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS | IBV_QP_AV | IBV_QP_CUR_STATE |
                        k_path_opts | rnr |
                        (rc ? IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
                                  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY
                            : 0)};
        }
        break;
    case IBV_QPS_SQE:
        if (next == IBV_QPS_RTS && !rc) {
            return {true, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS};
        }
        break;
    default:
        break;
    }
    return {};
}

transition_rule ud_rule(ibv_qp_state cur, ibv_qp_state next) noexcept
{
    switch (cur) {
    case IBV_QPS_RESET:
        if (next == IBV_QPS_INIT) {
            return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0};
        }
        break;
    case IBV_QPS_INIT:
        if (next == IBV_QPS_INIT || next == IBV_QPS_RTR) {
            return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY};
        }
        break;
    case IBV_QPS_RTR:
        if (next == IBV_QPS_RTS) {
            return {true, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY};
        }
        break;
    case IBV_QPS_RTS:
        if (next == IBV_QPS_RTS) {
            return {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
        }
        if (next == IBV_QPS_SQD) {
            return {true, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY};
        }
        break;
    case IBV_QPS_SQD:
        if (next == IBV_QPS_RTS) {
            return {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
        }
        if (next == IBV_QPS_SQD) {
            return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
        }
        break;
    case IBV_QPS_SQE:
        if (next == IBV_QPS_RTS) {
            return {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
        }
        break;
    default:
        break;
    }
    return {};
}

} // namespace

transition_rule qp_transition(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next) noexcept
{
    if (cur < IBV_QPS_RESET || cur > IBV_QPS_ERR || next < IBV_QPS_RESET || next > IBV_QPS_ERR) {
        return {};
    }
    // Any state may go to RESET or ERR with no attributes (IB spec 10.3.1).
    if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
        return {true, 0, 0};
    }
    switch (type) {
    case IBV_QPT_RC: return rc_uc_rule(true, cur, next);
    case IBV_QPT_UC: return rc_uc_rule(false, cur, next);
    case IBV_QPT_UD: return ud_rule(cur, next);
    default: return {};
    }
}

int check_modify(ibv_qp_type type, ibv_qp_state cur, const ibv_qp_attr& attr, int mask,
                 ibv_mtu max_mtu, uint8_t max_rd_atomic) noexcept
{
    const ibv_qp_state next = (mask & IBV_QP_STATE) ? attr.qp_state : cur;
    const transition_rule r = qp_transition(type, cur, next);
    if (!r.valid) {
        return EINVAL;
    }
    const int given = mask & ~IBV_QP_STATE;
    if ((given & r.required) != r.required || (given & ~(r.required | r.optional)) != 0) {
        return EINVAL;
    }
    if ((mask & IBV_QP_CUR_STATE) && attr.cur_qp_state != cur) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PORT) && attr.port_num != 1) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index != 0) {
        return EINVAL;
    }
    if ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) {
        return EINVAL;
    }
    if ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) {
        return EINVAL;
    }
    if ((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31) {
        return EINVAL;
    }
    if ((mask & IBV_QP_PATH_MTU) && (attr.path_mtu < IBV_MTU_256 || attr.path_mtu > max_mtu)) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > max_rd_atomic) {
        return EINVAL;
    }
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > max_rd_atomic) {
        return EINVAL;
    }
    if ((mask & IBV_QP_ACCESS_FLAGS) &&
        (attr.qp_access_flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)) != 0) {
        return EINVAL;
    }
    return 0;
}

} // namespace metaroce::verbs
