// Fills the forwarding trampolines before anything can call them: the constructor of
// libibverbs.so.1 runs before those of the libraries and programs that depend on it.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "verbs/forwarder.hpp"
#include "verbs/real_lib.hpp"

namespace metaroce::verbs {
namespace {

// Reached only when the real library lacks a symbol it exported at build time (it was
// upgraded under us): fail loudly instead of jumping to address 0.
[[noreturn]] void missing_symbol()
{
    std::fprintf(stderr, "metaroce: libibverbs symbol missing from %s; rebuild metaroce\n",
                 real_lib_path());
    std::abort();
}

__attribute__((constructor(101))) void fill_slots()
{
    void* h = real_handle();
    for (size_t i = 0; i < k_fwd_count; ++i) {
        void* f = h ? dlvsym(h, k_fwd_table[i].name, k_fwd_table[i].version) : nullptr;
        metaroce_fwd_slots[i] = f ? f : reinterpret_cast<void*>(&missing_symbol);
    }
}

} // namespace
} // namespace metaroce::verbs
