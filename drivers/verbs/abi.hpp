// The public rdma-core 44 Verbs ABI (Debian's libibverbs-dev) as this front end
// implements it: verbs.h with the macros that would rename our exported definitions
// undone, the one private symbol unmodified tools import, and the export marker.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_get_device_list

// Exported with default visibility; everything else in the library is hidden.
#define MRV_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
// IBVERBS_PRIVATE_34 (rdma-core's driver.h, not installed): ibv_devinfo and perftest
// import it. *type is enum ibv_gid_type_sysfs: 0 IB/RoCE v1, 1 RoCE v2.
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       uint32_t* type);
}

namespace metaroce::verbs {

template <class Outer, class Inner>
Outer* outer_of(Inner* p, Inner Outer::*member) noexcept
{
    const auto off = reinterpret_cast<size_t>(&(static_cast<Outer*>(nullptr)->*member));
    return reinterpret_cast<Outer*>(reinterpret_cast<char*>(p) - off);
}

} // namespace metaroce::verbs
