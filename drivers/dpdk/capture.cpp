#include "dpdk/capture.hpp"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_pdump.h>

#include "dpdk/eal.hpp"

namespace metaroce::dpdk {

std::string enable_capture()
{
    if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
        return "not the primary process";
    }
    if (rte_pdump_init() != 0) {
        return "rte_pdump_init failed: " + rte_error_string(rte_errno);
    }
    if (!eal_has_hugepages()) {
        return "running with --no-huge: dpdk-dumpcap needs shared (hugepage) memory to attach";
    }
    return {};
}

} // namespace metaroce::dpdk
