// Why rte_eal_init failed: the runtime config lock and hugetlbfs, read from the system.
#include "dpdk/diagnose.hpp"

#include <rte_eal.h>
#include <rte_errno.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace metaroce::dpdk {

namespace {

// "--opt=value" or "--opt value"; true when argv[i] is `opt`, value in `out`.
bool take_value(int argc, char** argv, int& i, const char* opt, std::string& out)
{
    const size_t n = std::strlen(opt);
    if (std::strncmp(argv[i], opt, n) != 0) {
        return false;
    }
    if (argv[i][n] == '=') {
        out = argv[i] + n + 1;
        return true;
    }
    if (argv[i][n] == '\0' && i + 1 < argc) {
        out = argv[++i];
        return true;
    }
    return false;
}

// The EAL's runtime directory, where its config file (and lock) lives.
std::string runtime_dir(const eal_args& a)
{
    if (const char* d = rte_eal_get_runtime_dir(); d != nullptr && *d != '\0') {
        return d;
    }
    const char* base = "/var/run";
    if (getuid() != 0) {
        const char* xdg = std::getenv("XDG_RUNTIME_DIR");
        base = xdg != nullptr ? xdg : "/tmp";
    }
    return std::string(base) + "/dpdk/" + a.file_prefix;
}

// The pid holding a lock on the runtime config (a running primary), or 0.
pid_t config_lock_holder(const eal_args& a)
{
    const std::string path = runtime_dir(a) + "/config";
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET; // l_start = l_len = 0: the whole file
    const bool got = fcntl(fd, F_GETLK, &fl) == 0;
    close(fd);
    return got && fl.l_type != F_UNLCK ? fl.l_pid : 0;
}

std::vector<std::string> hugetlbfs_mounts()
{
    std::vector<std::string> out;
    std::ifstream f("/proc/mounts");
    for (std::string line; std::getline(f, line);) {
        std::istringstream in(line);
        std::string dev, dir, type;
        if (in >> dev >> dir >> type && type == "hugetlbfs") {
            out.push_back(dir);
        }
    }
    return out;
}

uint64_t free_hugepages()
{
    uint64_t total = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/sys/kernel/mm/hugepages", ec)) {
        std::ifstream f(e.path() / "free_hugepages");
        uint64_t n = 0;
        if (f >> n) {
            total += n;
        }
    }
    return total;
}

// Why the EAL found no hugepages; "" when it should have found some.
std::string hugepage_shortage(const eal_args& a)
{
    const auto mounts = hugetlbfs_mounts();
    if (!a.huge_dir.empty()) {
        std::error_code ec;
        const auto want = std::filesystem::weakly_canonical(a.huge_dir, ec);
        bool mounted = false;
        for (const auto& m : mounts) {
            mounted |= std::filesystem::weakly_canonical(m, ec) == want;
        }
        if (!mounted) {
            return "--huge-dir " + a.huge_dir + " is not a hugetlbfs mount";
        }
    }
    if (mounts.empty()) {
        return "no hugetlbfs is mounted";
    }
    if (free_hugepages() == 0) {
        return "no free hugepages are reserved";
    }
    return "";
}

} // namespace

eal_args scan_eal_args(int argc, char** argv)
{
    eal_args a;
    for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        std::string v;
        if (take_value(argc, argv, i, "--file-prefix", v)) {
            a.file_prefix = v;
        } else if (take_value(argc, argv, i, "--huge-dir", v)) {
            a.huge_dir = v;
        } else if (std::strcmp(argv[i], "--no-huge") == 0) {
            a.no_huge = true;
        } else if (std::strcmp(argv[i], "--in-memory") == 0) {
            a.in_memory = true;
        }
    }
    return a;
}

std::string explain_eal_failure(const eal_args& a, int rte_err)
{
    const std::string head = "cannot initialise the EAL: ";
    if (!a.in_memory) {
        if (const pid_t pid = config_lock_holder(a); pid != 0) {
            return head + "another DPDK process (pid " + std::to_string(pid) + ") uses --file-prefix " +
                   a.file_prefix + "; give each process its own --file-prefix";
        }
    }
    if (!a.no_huge) {
        if (const std::string why = hugepage_shortage(a); !why.empty()) {
            return head + "no hugepages are available (" + why +
                   "); run with --no-huge, or reserve and mount some: "
                   "echo 512 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages; "
                   "mkdir -p /dev/hugepages; mount -t hugetlbfs nodev /dev/hugepages";
        }
    }
    // rte_errno is often left at 0 ("Success"): then only the EAL's own lines say why.
    return head + (rte_err != 0 ? std::string(rte_strerror(rte_err)) + " " : std::string()) +
           "(the EAL's reason is in its lines above)";
}

} // namespace metaroce::dpdk
