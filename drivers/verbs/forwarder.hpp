// The forwarding libibverbs.so.1: the (name, version) pairs it does not implement
// jump through a slot filled from the real library at load time (gen_forwarder.py).
#pragma once

#include <cstddef>

extern "C" void* metaroce_fwd_slots[];

namespace metaroce::verbs {

struct fwd_entry {
    const char* name;
    const char* version;
};
extern const fwd_entry k_fwd_table[];
extern const size_t k_fwd_count;

} // namespace metaroce::verbs
