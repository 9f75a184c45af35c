#include "dpdk/flow_steer.hpp"

#include <rte_byteorder.h>
#include <rte_flow.h>

namespace metaroce::dpdk {

namespace {

std::string reason(const rte_flow_error& e, int rc)
{
    std::string s = e.message != nullptr ? e.message : "refused";
    return s + " (" + std::to_string(rc) + ")";
}

} // namespace

bool install_flow_steering(uint16_t port_id, const std::vector<flow_target>& targets,
                           std::string& why)
{
    rte_flow_attr attr{};
    attr.ingress = 1;
    for (const flow_target& t : targets) {
        rte_flow_item_ipv4 spec{};
        rte_flow_item_ipv4 mask{};
        spec.hdr.dst_addr = rte_cpu_to_be_32(t.dst_ip);
        mask.hdr.dst_addr = UINT32_MAX;
        rte_flow_item pattern[3] = {};
        pattern[0].type = RTE_FLOW_ITEM_TYPE_ETH;
        pattern[1].type = RTE_FLOW_ITEM_TYPE_IPV4;
        pattern[1].spec = &spec;
        pattern[1].mask = &mask;
        pattern[2].type = RTE_FLOW_ITEM_TYPE_END;
        rte_flow_action_queue queue{};
        queue.index = t.queue;
        rte_flow_action actions[2] = {};
        actions[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
        actions[0].conf = &queue;
        actions[1].type = RTE_FLOW_ACTION_TYPE_END;
        rte_flow_error err{};
        int rc = rte_flow_validate(port_id, &attr, pattern, actions, &err);
        if (rc == 0 && rte_flow_create(port_id, &attr, pattern, actions, &err) == nullptr) {
            rc = -1;
        }
        if (rc != 0) {
            why = reason(err, rc);
            remove_flow_steering(port_id);
            return false;
        }
    }
    return true;
}

void remove_flow_steering(uint16_t port_id) noexcept
{
    rte_flow_error err{};
    rte_flow_flush(port_id, &err); // ours are the only rules on the port
}

} // namespace metaroce::dpdk
