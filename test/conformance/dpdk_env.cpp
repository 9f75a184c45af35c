#include "dpdk_env.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace metaroce::conformance {

namespace {

void run(const std::string& cmd)
{
    if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) {
        throw std::runtime_error("'" + cmd + "' failed");
    }
}

// Namespaces of runners that died without cleaning up (killed by a timeout).
void remove_stale()
{
    DIR* d = opendir("/var/run/netns");
    if (d == nullptr) {
        return;
    }
    std::vector<std::string> stale;
    while (dirent* e = readdir(d)) {
        int pid = 0;
        if (std::sscanf(e->d_name, "mrconf-%d", &pid) == 1 && kill(pid, 0) != 0) {
            stale.push_back(e->d_name);
        }
    }
    closedir(d);
    for (const std::string& n : stale) {
        std::system(("ip netns del " + n + " >/dev/null 2>&1").c_str());
    }
}

std::vector<uint8_t> mac_of(int fd, const std::string& ifname)
{
    ifreq r{};
    std::strncpy(r.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd, SIOCGIFHWADDR, &r) != 0) {
        throw std::runtime_error("cannot read the MAC of " + ifname);
    }
    return {reinterpret_cast<uint8_t*>(r.ifr_hwaddr.sa_data), reinterpret_cast<uint8_t*>(r.ifr_hwaddr.sa_data) + 6};
}

} // namespace

netns_env::netns_env()
{
    remove_stale();
    const std::string id = std::to_string(getpid());
    ns_ = "mrconf-" + id;
    app_if_ = "mrca" + id;
    tester_if_ = "mrcb" + id;
    run("ip netns add " + ns_);
    try {
        run("ip link add " + app_if_ + " type veth peer name " + tester_if_);
        run("ip link set " + app_if_ + " netns " + ns_);
        run("ip link set " + tester_if_ + " netns " + ns_);
        // No IPv6 chatter (router and neighbour solicitations) on the test link.
        run("ip netns exec " + ns_ + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1");
        run("ip netns exec " + ns_ + " sysctl -qw net.ipv6.conf.default.disable_ipv6=1");
        for (const std::string& i : {app_if_, tester_if_}) {
            run("ip -n " + ns_ + " link set " + i + " mtu 9000 up");
        }
    } catch (...) {
        std::system(("ip netns del " + ns_ + " >/dev/null 2>&1").c_str());
        throw;
    }
}

netns_env::~netns_env()
{
    std::system(("ip netns del " + ns_ + " >/dev/null 2>&1").c_str());
}

int netns_env::open_raw_socket(std::vector<uint8_t>& tester_mac, std::vector<uint8_t>& app_mac) const
{
    const int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) != 0) {
        throw std::runtime_error("cannot enter network namespace " + ns_);
    }
    // The socket keeps the namespace it was made in; the process goes back at once.
    const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    int err = errno;
    unsigned idx = if_nametoindex(tester_if_.c_str());
    if (fd >= 0) {
        try {
            tester_mac = mac_of(fd, tester_if_);
            app_mac = mac_of(fd, app_if_);
        } catch (...) {
            err = ENODEV;
        }
    }
    setns(self, CLONE_NEWNET);
    close(self);
    close(target);
    if (fd < 0 || idx == 0 || tester_mac.empty()) {
        throw std::runtime_error("cannot open a packet socket on " + tester_if_ + ": " + std::strerror(err));
    }
    sockaddr_ll a{};
    a.sll_family = AF_PACKET;
    a.sll_protocol = htons(ETH_P_ALL);
    a.sll_ifindex = int(idx);
    int rcvbuf = 16 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(fd);
        throw std::runtime_error("cannot bind the packet socket: " + std::string(std::strerror(errno)));
    }
    packet_mreq m{};
    m.mr_ifindex = int(idx);
    m.mr_type = PACKET_MR_PROMISC;
    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m, sizeof m);
    return fd;
}

void netns_env::address_app_end(const std::string& addr, const std::vector<std::string>& peers,
                                 const std::vector<uint8_t>& tester_mac) const
{
    char mac[32];
    std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", tester_mac[0], tester_mac[1], tester_mac[2],
                  tester_mac[3], tester_mac[4], tester_mac[5]);
    run("ip -n " + ns_ + " addr add " + addr + "/24 dev " + app_if_);
    for (const std::string& p : peers) {
        run("ip -n " + ns_ + " neigh replace " + p + " lladdr " + mac + " nud permanent dev " + app_if_);
    }
    run("ip netns exec " + ns_ + " ethtool -K " + app_if_ + " tx off gso off tso off tx-udp-segmentation off");
}

app_process::app_process(const std::string& ns, const std::vector<std::string>& argv, bool verbose)
    : verbose_(verbose)
{
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
        throw std::runtime_error("pipe failed");
    }
    pid_ = fork();
    if (pid_ < 0) {
        throw std::runtime_error("fork failed");
    }
    if (pid_ == 0) {
        setpgid(0, 0);
        // If the runner dies (a test timeout), the app must not keep polling a core.
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        dup2(from_child[1], 2);
        std::vector<std::string> full = {"ip", "netns", "exec", ns};
        full.insert(full.end(), argv.begin(), argv.end());
        std::vector<char*> args;
        for (std::string& s : full) {
            args.push_back(s.data());
        }
        args.push_back(nullptr);
        execvp("ip", args.data());
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
    fcntl(out_, F_SETFL, fcntl(out_, F_GETFL) | O_NONBLOCK);
}

app_process::~app_process()
{
    quit();
}

void app_process::quit()
{
    if (pid_ <= 0) {
        return;
    }
    const std::string q = "quit\n";
    (void)!write(in_, q.data(), q.size());
    for (int i = 0; i < 100; ++i) { // 5 s for the app to stop its ports
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
            pid_ = -1;
            break;
        }
        std::string l;
        read_line(l, 50);
    }
    if (pid_ > 0) {
        kill(-pid_, SIGTERM);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    close(in_);
    close(out_);
}

bool app_process::read_line(std::string& line, int timeout_ms)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const size_t nl = buf_.find('\n');
        if (nl != std::string::npos) {
            line = buf_.substr(0, nl);
            buf_.erase(0, nl + 1);
            // The prompt is printed without a newline before each echoed command.
            for (size_t p; (p = line.find("metaroce> ")) != std::string::npos;) {
                line.erase(p, 10);
            }
            if (!line.empty() && line.back() == '\r') {
                line.pop_back();
            }
            if (verbose_) {
                std::fprintf(stderr, "  app| %s\n", line.c_str());
            }
            return true;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd p{out_, POLLIN, 0};
        poll(&p, 1, int(left.count()));
        char tmp[65536];
        const ssize_t n = read(out_, tmp, sizeof tmp);
        if (n > 0) {
            buf_.append(tmp, size_t(n));
        } else if (n == 0) {
            return false; // the app exited
        }
    }
}

std::string app_process::wait_for(const std::function<bool(const std::string&)>& pred, int timeout_ms)
{
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        std::string l;
        if (left.count() <= 0 || !read_line(l, int(left.count()))) {
            throw std::runtime_error("the app did not print what was expected (or exited)");
        }
        if (pred(l)) {
            return l;
        }
    }
}

std::vector<std::string> app_process::command(const std::string& line,
                                              const std::function<bool(const std::string&)>& done,
                                              int timeout_ms)
{
    if (line.size() >= 127) {
        throw std::runtime_error("prompt line too long for the app's command line: " + line);
    }
    const std::string l = line + "\n";
    if (write(in_, l.data(), l.size()) != ssize_t(l.size())) {
        throw std::runtime_error("the app's prompt is gone");
    }
    std::vector<std::string> out;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        std::string r;
        if (left.count() <= 0 || !read_line(r, int(left.count()))) {
            throw std::runtime_error("no answer from the app to '" + line + "'");
        }
        if (r == line) {
            continue; // the prompt's echo
        }
        out.push_back(r);
        if (done(r) || r.rfind("Bad arguments:", 0) == 0 || r.rfind("Unknown command", 0) == 0) {
            return out;
        }
    }
}

} // namespace metaroce::conformance
