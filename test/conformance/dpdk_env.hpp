// The world the dpdk target runs in: a network namespace with a veth pair, one end
// for the app's net_af_packet port, the other for the tester's AF_PACKET socket, and
// the app itself driven through its prompt.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace metaroce::conformance {

// Namespace and veth pair; removed again by the destructor.
class netns_env {
public:
    netns_env();  // throws std::runtime_error
    ~netns_env();
    netns_env(const netns_env&) = delete;
    netns_env& operator=(const netns_env&) = delete;

    const std::string& ns() const { return ns_; }
    const std::string& app_if() const { return app_if_; }
    const std::string& tester_if() const { return tester_if_; }
    // A raw socket on the tester's end, opened inside the namespace.
    int open_raw_socket(std::vector<uint8_t>& tester_mac, std::vector<uint8_t>& app_mac) const;
    // For an app on kernel sockets (the udp target): the app's end gets `addr`/24 and
    // static neighbours for `peers`, all at the tester's MAC (the tester's end answers
    // no ARP); no checksum or segmentation offload, so the tester sees finished frames.
    void address_app_end(const std::string& addr, const std::vector<std::string>& peers,
                         const std::vector<uint8_t>& tester_mac) const;

private:
    std::string ns_, app_if_, tester_if_;
};

// The app as a child process (inside the namespace) with its prompt on a pipe.
class app_process {
public:
    app_process(const std::string& ns, const std::vector<std::string>& argv, bool verbose);
    ~app_process();
    app_process(const app_process&) = delete;
    app_process& operator=(const app_process&) = delete;

    // Sends one prompt line; returns the output lines up to the first one that `done`
    // accepts (included), or throws std::runtime_error after timeout_ms.
    std::vector<std::string> command(const std::string& line, const std::function<bool(const std::string&)>& done,
                                     int timeout_ms = 5000);
    // Waits for an output line (the banner, for example).
    std::string wait_for(const std::function<bool(const std::string&)>& pred, int timeout_ms);
    void quit();

private:
    bool read_line(std::string& line, int timeout_ms);
    pid_t pid_ = -1;
    int in_ = -1, out_ = -1;
    std::string buf_;
    bool verbose_;
};

} // namespace metaroce::conformance
