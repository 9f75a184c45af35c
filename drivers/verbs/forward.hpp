// Calls the real library's version of an exported verb: for objects that are not
// metaroce's (a real HCA's). Without a real library, fails with EOPNOTSUPP.
#pragma once

#include <cerrno>
#include <type_traits>

#include "verbs/real_lib.hpp"

namespace metaroce::verbs {

template <class R, class... A>
R forward(const char* name, A... args)
{
    auto f = real_fn<R (*)(A...)>(name);
    if (f == nullptr) {
        errno = EOPNOTSUPP;
        if constexpr (std::is_pointer_v<R>) {
            return nullptr;
        } else if constexpr (std::is_void_v<R>) {
            return;
        } else {
            return R(-1);
        }
    }
    return f(args...);
}

} // namespace metaroce::verbs
