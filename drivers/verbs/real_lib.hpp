// The distribution's libibverbs, opened by absolute path (RTLD_LOCAL): objects that
// are not metaroce's (real HCAs) go to it.
#pragma once

#include <dlfcn.h>

namespace metaroce::verbs {

const char* real_lib_path() noexcept;
// nullptr if it cannot be opened (then only metaroce0 exists).
void* real_handle() noexcept;

// The real library's default version of `name`, or nullptr.
template <class Fn>
Fn real_fn(const char* name) noexcept
{
    void* h = real_handle();
    return h ? reinterpret_cast<Fn>(dlsym(h, name)) : nullptr;
}

} // namespace metaroce::verbs
