// The modify_qp state machine of the Verbs front end (drivers/verbs/qp_state.cpp)
// against the IB specification's table (10.3.1): transitions, required and optional
// attributes, value checks.
#include <catch2/catch.hpp>

#include "verbs/qp_state.hpp"

using namespace metaroce::verbs;

namespace {

constexpr int k_init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int k_rtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int k_rts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC;

ibv_qp_attr attr_for(ibv_qp_state next)
{
    ibv_qp_attr a{};
    a.qp_state = next;
    a.port_num = 1;
    a.path_mtu = IBV_MTU_1024;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    a.max_dest_rd_atomic = 1;
    return a;
}

int rc(ibv_qp_state cur, ibv_qp_state next, int mask, ibv_qp_attr a)
{
    a.qp_state = next;
    return check_modify(IBV_QPT_RC, cur, a, mask | IBV_QP_STATE, IBV_MTU_4096, 16);
}

} // namespace

TEST_CASE("RC walks RESET INIT RTR RTS SQD RTS with exactly the required attributes")
{
    const ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_INIT, k_init, a) == 0);
    CHECK(rc(IBV_QPS_INIT, IBV_QPS_INIT, 0, a) == 0);
    CHECK(rc(IBV_QPS_INIT, IBV_QPS_RTR, k_rtr, a) == 0);
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts, a) == 0);
    CHECK(rc(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_MIN_RNR_TIMER, a) == 0);
    CHECK(rc(IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_EN_SQD_ASYNC_NOTIFY, a) == 0);
    CHECK(rc(IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_TIMEOUT | IBV_QP_AV, a) == 0);
    CHECK(rc(IBV_QPS_SQD, IBV_QPS_RTS, 0, a) == 0);
}

TEST_CASE("every required attribute of each RC transition is required")
{
    const ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    for (int bit = 0; bit < 26; ++bit) {
        const int m = 1 << bit;
        if (k_init & m) {
            CHECK(rc(IBV_QPS_RESET, IBV_QPS_INIT, k_init & ~m, a) == EINVAL);
        }
        if (k_rtr & m) {
            CHECK(rc(IBV_QPS_INIT, IBV_QPS_RTR, k_rtr & ~m, a) == EINVAL);
        }
        if (k_rts & m) {
            CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts & ~m, a) == EINVAL);
        }
    }
}

TEST_CASE("attributes a transition does not take are refused")
{
    const ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_INIT, k_init | IBV_QP_SQ_PSN, a) == EINVAL);
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_INIT, k_init | IBV_QP_QKEY, a) == EINVAL); // UD's
    CHECK(rc(IBV_QPS_INIT, IBV_QPS_RTR, k_rtr | IBV_QP_TIMEOUT, a) == EINVAL);
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts | IBV_QP_DEST_QPN, a) == EINVAL);
    CHECK(rc(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_TIMEOUT, a) == EINVAL);
}

TEST_CASE("transitions the specification does not have are refused")
{
    const ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_RTR, k_rtr, a) == EINVAL);
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_RTS, k_rts, a) == EINVAL);
    CHECK(rc(IBV_QPS_INIT, IBV_QPS_RTS, k_rts, a) == EINVAL);
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_INIT, k_init, a) == EINVAL);
    CHECK(rc(IBV_QPS_ERR, IBV_QPS_RTS, 0, a) == EINVAL);
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_SQD, 0, a) == EINVAL);
    CHECK(rc(IBV_QPS_RTS, IBV_QPS_SQE, 0, a) == EINVAL); // RC has no SQE by modify
}

TEST_CASE("any state goes to RESET or ERR without attributes")
{
    const ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    for (ibv_qp_state s : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
                           IBV_QPS_SQE, IBV_QPS_ERR}) {
        CHECK(rc(s, IBV_QPS_RESET, 0, a) == 0);
        CHECK(rc(s, IBV_QPS_ERR, 0, a) == 0);
    }
}

TEST_CASE("values are checked")
{
    ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    a.port_num = 2;
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_INIT, k_init, a) == EINVAL);
    a = attr_for(IBV_QPS_INIT);
    a.pkey_index = 1;
    CHECK(rc(IBV_QPS_RESET, IBV_QPS_INIT, k_init, a) == EINVAL);
    a = attr_for(IBV_QPS_INIT);
    a.retry_cnt = 8;
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts, a) == EINVAL);
    a = attr_for(IBV_QPS_INIT);
    a.timeout = 32;
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts, a) == EINVAL);
    a = attr_for(IBV_QPS_INIT);
    a.max_rd_atomic = 17;
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts, a) == EINVAL);
    a = attr_for(IBV_QPS_INIT);
    a.path_mtu = IBV_MTU_4096;
    a.qp_state = IBV_QPS_RTR;
    CHECK(check_modify(IBV_QPT_RC, IBV_QPS_INIT, a, k_rtr | IBV_QP_STATE, IBV_MTU_2048, 16) == EINVAL);
    a = attr_for(IBV_QPS_RTS);
    a.cur_qp_state = IBV_QPS_RTS; // a wrong current state
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts | IBV_QP_CUR_STATE, a) == EINVAL);
    a.cur_qp_state = IBV_QPS_RTR;
    CHECK(rc(IBV_QPS_RTR, IBV_QPS_RTS, k_rts | IBV_QP_CUR_STATE, a) == 0);
}

TEST_CASE("UD and UC have their own attribute sets")
{
    ibv_qp_attr a = attr_for(IBV_QPS_INIT);
    a.qp_state = IBV_QPS_INIT;
    CHECK(check_modify(IBV_QPT_UD, IBV_QPS_RESET, a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, IBV_MTU_4096, 16) == 0);
    CHECK(check_modify(IBV_QPT_UD, IBV_QPS_RESET, a, IBV_QP_STATE | k_init, IBV_MTU_4096, 16) == EINVAL);
    a.qp_state = IBV_QPS_RTR;
    CHECK(check_modify(IBV_QPT_UC, IBV_QPS_INIT, a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
                       IBV_MTU_4096, 16) == 0);
}
