// The transport settings metaroce-perf's options override, on either backend's base.
#pragma once

#include <algorithm>

#include "metaroce/config.hpp"
#include "options.hpp"

namespace metaroce::perf {

inline transport_config transport_from(const options& o, transport_config t)
{
    t.mtu = o.mtu;
    t.paths = o.paths;
    if (o.min_rto_us != 0) {
        t.min_rto_ns = uint64_t(o.min_rto_us) * 1000;
        // A floor above the default ceiling raises the ceiling with it.
        t.max_rto_ns = std::max(t.max_rto_ns, t.min_rto_ns);
    }
    if (o.max_timeouts != 0) {
        t.max_timeouts = o.max_timeouts;
    }
    return t;
}

} // namespace metaroce::perf
