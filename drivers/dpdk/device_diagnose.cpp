// Why a device is missing or cannot start: the EAL's devargs against the probed ports,
// and memif sockets against the listening sockets in /proc/net/unix.
#include "dpdk/diagnose.hpp"

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace metaroce::dpdk {

namespace {

// "role=server,socket=/x" -> {role: server, socket: /x}
std::map<std::string, std::string> kvargs(const char* args)
{
    std::map<std::string, std::string> out;
    std::istringstream in(args != nullptr ? args : "");
    for (std::string kv; std::getline(in, kv, ',');) {
        const size_t eq = kv.find('=');
        out[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
    return out;
}

struct memif_socket {
    std::string role;
    std::string path;
    bool abstract = true;
};

// net_memif's devargs with its defaults (DPDK 22.11: client, /run/memif.sock, abstract).
memif_socket memif_of(const char* args)
{
    auto kv = kvargs(args);
    memif_socket m;
    m.role = kv.count("role") != 0 ? kv["role"] : "client";
    m.path = kv.count("socket") != 0 ? kv["socket"] : "/run/memif.sock";
    m.abstract = kv.count("socket-abstract") == 0 || kv["socket-abstract"] != "no";
    return m;
}

std::string describe(const memif_socket& m)
{
    return (m.abstract ? "abstract socket " : "socket ") + m.path;
}

// Whether some process listens on the unix socket (abstract names read "@name").
bool unix_listening(const memif_socket& m)
{
    const std::string want = (m.abstract ? "@" : "") + m.path;
    std::ifstream f("/proc/net/unix");
    std::string line;
    std::getline(f, line); // header
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string num, refs, proto, flags, type, st, inode, path;
        if (in >> num >> refs >> proto >> flags >> type >> st >> inode >> path && path == want &&
            (std::strtoul(flags.c_str(), nullptr, 16) & 0x10000) != 0) { // __SO_ACCEPTCON: listening
            return true;
        }
    }
    return false;
}

std::string explain_device(const rte_devargs& da)
{
    const std::string name = da.name;
    if (name.rfind("net_memif", 0) == 0) {
        const memif_socket m = memif_of(da.args);
        if (m.role == "server" && unix_listening(m)) {
            return name + " did not probe: the memif " + describe(m) +
                   " is in use by another process (a second role=server on it?); give this one "
                   "its own socket=PATH in --vdev, and its client the same";
        }
        struct stat st {};
        if (m.role == "server" && !m.abstract && stat(m.path.c_str(), &st) == 0) {
            return name + " did not probe: " + m.path +
                   " exists and nobody listens on it (left by a process that exited?); remove it "
                   "or give --vdev another socket=PATH";
        }
    }
    return name + " did not probe (its driver says why in the lines above)";
}

} // namespace

std::string explain_missing_devices()
{
    std::string out;
    for (const rte_devargs* da = rte_devargs_next(nullptr, nullptr); da != nullptr;
         da = rte_devargs_next(nullptr, da)) {
        uint16_t port = 0;
        if (rte_eth_dev_get_port_by_name(da->name, &port) == 0) {
            continue;
        }
        out += (out.empty() ? "" : "; ") + explain_device(*da);
    }
    return out;
}

std::string unused_ports(const std::vector<uint16_t>& used)
{
    std::string out;
    uint16_t port = 0;
    RTE_ETH_FOREACH_DEV(port)
    {
        if (std::find(used.begin(), used.end(), port) != used.end()) {
            continue;
        }
        char name[RTE_ETH_NAME_MAX_LEN] = "?";
        rte_eth_dev_get_name_by_port(port, name);
        out += (out.empty() ? "" : ", ") + std::to_string(port) + " (" + name + ")";
    }
    return out;
}

std::optional<memif_peer> memif_client_peer(uint16_t port_id)
{
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port_id, &info) != 0 || info.device == nullptr ||
        info.driver_name == nullptr || std::string(info.driver_name) != "net_memif") {
        return std::nullopt;
    }
    const rte_devargs* da = rte_dev_devargs(info.device);
    const memif_socket m = memif_of(da != nullptr ? da->args : nullptr);
    if (m.role != "client") {
        return std::nullopt;
    }
    return memif_peer{"the memif server at " + describe(m), unix_listening(m)};
}

} // namespace metaroce::dpdk
