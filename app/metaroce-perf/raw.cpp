#include "raw.hpp"

int metaroce::perf::run_raw(dpdk::node&, const options&, const run_info&)
{
    return 1;
}
