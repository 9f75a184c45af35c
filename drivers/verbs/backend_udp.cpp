// The kernel-UDP backend (drivers/udp): sockets the progress thread sleeps on.
#include "udp/node.hpp"
#include "verbs/backend.hpp"

namespace metaroce::verbs {
namespace {

class udp_backend final : public backend {
public:
    explicit udp_backend(std::unique_ptr<udp::node> n) : n_(std::move(n)) {}
    endpoint& ep() noexcept override { return n_->ep(); }
    const std::vector<uint32_t>& plane_addrs() const noexcept override
    {
        return n_->params().plane_addrs;
    }
    uint32_t max_mrs() const noexcept override { return n_->params().max_mrs; }
    bool poll(uint64_t now_ns) override { return n_->poll(now_ns); }
    int wait_fd() const noexcept override { return n_->wait_fd(); }

private:
    std::unique_ptr<udp::node> n_;
};

} // namespace

std::unique_ptr<backend> make_udp_backend(const settings& st, std::string& err)
{
    udp::node_params p;
    p.port = st.port;
    p.transport = verbs_transport(st, p.transport);
    p.test_drop_rate = st.test_drop_rate;
    std::vector<std::vector<uint32_t>> tries;
    if (!st.plane_addrs.empty()) {
        tries.push_back(st.plane_addrs);
    } else {
        // No configuration: the first free loopback address, so two processes on one
        // machine get distinct node addresses (the GID shows which).
        for (uint32_t i = 1; i < 255; ++i) {
            tries.push_back({(127u << 24) | i});
        }
    }
    for (const auto& t : tries) {
        p.plane_addrs = t;
        try {
            return std::make_unique<udp_backend>(std::make_unique<udp::node>(p));
        } catch (const std::exception& e) {
            err = e.what();
            if (st.plane_addrs.empty() && err.find("in use") != std::string::npos) {
                continue;
            }
            break;
        }
    }
    err = "cannot start the UDP backend: " + err;
    return nullptr;
}

} // namespace metaroce::verbs
