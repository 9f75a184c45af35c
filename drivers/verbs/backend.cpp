// Picks the backend: UDP is linked in; DPDK is a plugin next to this library, loaded
// the first time it is asked for (and never unloaded: the EAL cannot be).
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "verbs/backend.hpp"

namespace metaroce::verbs {
namespace {

// The directory this library was loaded from: the plugin is installed beside it.
std::string own_dir()
{
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&own_dir), &info) == 0 || info.dli_fname == nullptr) {
        return ".";
    }
    const std::string p = info.dli_fname;
    const size_t slash = p.rfind('/');
    return slash == std::string::npos ? "." : p.substr(0, slash);
}

make_dpdk_fn load_dpdk(std::string& err)
{
    static std::mutex mu;
    static make_dpdk_fn fn = nullptr;
    static std::string why;
    static bool tried = false;
    std::lock_guard<std::mutex> g(mu);
    if (!tried) {
        tried = true;
        const std::string path = own_dir() + "/" + k_dpdk_plugin;
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) {
            const char* e = dlerror();
            why = "METAROCE_BACKEND=dpdk: cannot load " + path + " (" + (e ? e : "?") +
                  "; was metaroce built with DPDK?)";
        } else if ((fn = reinterpret_cast<make_dpdk_fn>(dlsym(h, k_dpdk_entry))) == nullptr) {
            why = "METAROCE_BACKEND=dpdk: " + path + " lacks " + k_dpdk_entry;
        }
    }
    err = why;
    return fn;
}

} // namespace

std::unique_ptr<backend> make_backend(const settings& st, std::string& err)
{
    if (st.backend == "udp") {
        return make_udp_backend(st, err);
    }
    const make_dpdk_fn make = load_dpdk(err);
    if (make == nullptr) {
        return nullptr;
    }
    return std::unique_ptr<backend>(make(st, err));
}

} // namespace metaroce::verbs
