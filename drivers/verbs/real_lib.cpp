#include "verbs/real_lib.hpp"

#include <mutex>

namespace metaroce::verbs {

const char* real_lib_path() noexcept { return METAROCE_REAL_LIBIBVERBS; }

void* real_handle() noexcept
{
    static void* h = dlopen(METAROCE_REAL_LIBIBVERBS, RTLD_NOW | RTLD_LOCAL);
    return h;
}

} // namespace metaroce::verbs
