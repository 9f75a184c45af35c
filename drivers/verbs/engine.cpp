// Context lifecycle and progress: one metaroce node per ibv_context, driven by a
// progress thread and by the application's own ibv_poll_cq (both under c.mu: the
// core endpoint is not thread-safe).
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "verbs/context.hpp"

namespace metaroce::verbs {

void install_context_ops(vcontext& c);  // context_ops.cpp

namespace {

constexpr uint32_t k_ctl_slot = 32;     // bytes per control slot
constexpr uint32_t k_ctl_slots = 4096;  // slot 0 stays unused: the zero-length address

std::unique_ptr<udp::node> make_node(vcontext& c, std::string& err)
{
    udp::node_params p;
    p.port = c.st.port;
    p.transport.mtu = c.st.mtu;
    p.transport.paths = c.st.paths;
    p.transport.max_streams = c.st.max_streams;
    p.test_drop_rate = c.st.test_drop_rate;
    // A connection fails after the budget a Verbs requester with the usual settings
    // (timeout 14, retry_cnt 7: 4.096 us * 2^14 * 8) gives its peer, not the core's
    // fabric default of 100 ms: a process-based peer on a busy host can pause longer.
    p.transport.fail_silence_ns = 537'000'000;
    std::vector<std::vector<uint32_t>> tries;
    if (!c.st.plane_addrs.empty()) {
        tries.push_back(c.st.plane_addrs);
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
            return std::make_unique<udp::node>(p);
        } catch (const std::exception& e) {
            err = e.what();
            if (c.st.plane_addrs.empty() && err.find("in use") != std::string::npos) {
                continue;
            }
            return nullptr;
        }
    }
    return nullptr;
}

void progress_loop(vcontext* c)
{
    int spins = 0;
    while (!c->stop.load(std::memory_order_relaxed)) {
        uint64_t next = k_no_deadline;
        bool busy = false;
        bool work = false;
        {
            std::lock_guard<std::mutex> g(c->mu);
            const uint64_t now = now_ns();
            busy = drive(*c, now);
            next = c->node->ep().next_timer();
            for (const auto& [qpn, q] : c->qps) {
                work |= q->sq.head != q->sq.tail || q->waiting;
            }
            work |= !c->dirty.empty();
        }
        if (busy) {
            spins = 0;
            continue;
        }
        // Busy-poll a little while work is outstanding and the application is not
        // polling itself; then sleep on the sockets with the next timer as timeout.
        const uint64_t now = now_ns();
        const bool app_polling = now - c->app_poll_ns.load(std::memory_order_relaxed) < 200'000;
        if (work && !app_polling && ++spins < 200) {
            continue;
        }
        spins = 0;
        // Nanosecond timeout: ACK delays and RTOs are microseconds.
        uint64_t sleep_ns = 100'000'000;
        if (next != k_no_deadline) {
            sleep_ns = next <= now ? 0 : std::min<uint64_t>(next - now, sleep_ns);
        }
        const timespec ts{time_t(sleep_ns / 1'000'000'000), long(sleep_ns % 1'000'000'000)};
        c->sleeping.store(true);
        std::array<epoll_event, 4> ev;
        const int n = epoll_pwait2(c->epfd, ev.data(), int(ev.size()), &ts, nullptr);
        c->sleeping.store(false);
        for (int i = 0; i < n; ++i) {
            if (ev[size_t(i)].data.fd == c->wakefd) {
                uint64_t v;
                [[maybe_unused]] ssize_t r = read(c->wakefd, &v, sizeof v);
            }
        }
    }
}

} // namespace

uint64_t now_ns() noexcept { return udp::node::now_ns(); }

void logf(const vcontext& c, const char* fmt, ...)
{
    if (!c.st.log) {
        return;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "metaroce[%s]: %s\n", format_ipv4(c.addr).c_str(), buf);
}

vcontext* ctx_of(ibv_context* ctx) noexcept
{
    // vctx is vcontext's first member, and the context the last of vctx.
    return reinterpret_cast<vcontext*>(verbs_get_ctx(ctx));
}

bool is_ours(const ibv_context* ctx) noexcept
{
    return ctx != nullptr && ctx->device == our_device();
}

vcontext* open_context(std::string& err)
{
    auto c = std::make_unique<vcontext>();
    c->st = load_settings();
    if (!c->st.error.empty()) {
        err = c->st.error;
        return nullptr;
    }
    if (const uint16_t paths = g_paths_override.load(); paths != 0) {
        c->st.paths = paths; // metaroce_set_paths (verbs_ext.h)
    }
    if (c->st.backend != "udp") {
        err = "METAROCE_BACKEND=" + c->st.backend +
              ": only the udp backend is available to Verbs programs in this build";
        return nullptr;
    }
    c->node = make_node(*c, err);
    if (!c->node) {
        err = "cannot start the UDP backend: " + err;
        return nullptr;
    }
    c->planes = c->node->params().plane_addrs;
    c->addr = c->planes[0];
    c->ctl_mem.assign(size_t(k_ctl_slot) * k_ctl_slots, 0);
    auto mr = c->node->ep().memory().register_region(c->ctl_mem.data(), c->ctl_mem.size(),
                                                     access::local_write);
    if (!mr) {
        err = "cannot register the control area";
        return nullptr;
    }
    c->ctl_lkey = mr->lkey;
    for (uint32_t s = k_ctl_slots - 1; s >= 1; --s) {
        c->ctl_free_tx.push_back(s);
    }
    int async[2];
    if (pipe2(async, O_CLOEXEC) != 0) {
        err = std::string("pipe: ") + std::strerror(errno);
        return nullptr;
    }
    fcntl(async[1], F_SETFL, O_NONBLOCK);
    c->async_w = async[1];
    c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = c->node->wait_fd();
    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->node->wait_fd(), &ev);
    ev.data.fd = c->wakefd;
    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wakefd, &ev);

    ibv_context& ctx = c->vctx.context;
    ctx.device = our_device();
    ctx.cmd_fd = -1;
    ctx.async_fd = async[0];
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx.sz = sizeof(verbs_context);
    install_context_ops(*c);
    vcontext* raw = c.release();
    raw->progress = std::thread(progress_loop, raw);
    logf(*raw, "opened metaroce0 on %s:%u", format_ipv4(raw->addr).c_str(), raw->st.port);
    return raw;
}

void close_context(vcontext* c)
{
    c->stop.store(true);
    wake(*c);
    c->progress.join();
    {
        std::lock_guard<std::mutex> g(c->mu);
        // Let delayed ACKs leave: the peer's last messages arrived, and its requests
        // must complete as they would with an HCA that acknowledged them on receipt.
        const uint64_t settle = now_ns() + 3'000'000;
        while (now_ns() < settle) {
            drive(*c, now_ns());
        }
        // No CLOSE: in Verbs a QP going away is invisible to its peer until the peer
        // sends (and times out), while a closed connection would flush the receives
        // every other QP of the peer still has posted. Idle detection (spec 7.8)
        // frees the peer's side.
    }
    close(c->vctx.context.async_fd);
    close(c->async_w);
    close(c->wakefd);
    close(c->epfd);
    delete c;
}

void wake(vcontext& c) noexcept
{
    if (c.sleeping.load(std::memory_order_relaxed)) {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t r = write(c.wakefd, &one, sizeof one);
    }
}

void mark_dirty(vcontext& c, vqp& q)
{
    for (vqp* d : c.dirty) {
        if (d == &q) {
            return;
        }
    }
    c.dirty.push_back(&q);
}

bool drive(vcontext& c, uint64_t now)
{
    endpoint& ep = c.node->ep();
    bool busy = c.node->poll(now);
    // Completions first: a failed connection's statuses reach its QPs before the
    // error event moves whatever is left to the error state.
    std::array<completion, 64> wcs;
    for (size_t n; (n = ep.poll_cq(wcs)) > 0;) {
        busy = true;
        for (vqp* q : c.blocked) {
            mark_dirty(c, *q);
        }
        c.blocked.clear();
        for (size_t i = 0; i < n; ++i) {
            if ((wcs[i].wr_id >> 40) == 0) {
                on_ctl_completion(c, wcs[i], now);
            } else {
                on_qp_completion(c, wcs[i]);
            }
        }
    }
    std::array<conn_event, 16> evs;
    for (size_t n; (n = ep.poll_events(evs)) > 0;) {
        busy = true;
        for (size_t i = 0; i < n; ++i) {
            on_conn_event(c, evs[i], now);
        }
    }
    flush_ctl_backlog(c, now);
    if (!c.dirty.empty()) {
        std::vector<vqp*> d;
        d.swap(c.dirty);
        for (vqp* q : d) {
            submit(c, *q, now);
        }
    }
    check_waiting(c, now);
    return busy;
}

void post_async(vcontext& c, ibv_event_type type, void* obj) noexcept
{
    ibv_async_event e{};
    e.event_type = type;
    switch (type) {
    case IBV_EVENT_CQ_ERR: e.element.cq = static_cast<ibv_cq*>(obj); break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: e.element.srq = static_cast<ibv_srq*>(obj); break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR: e.element.port_num = 1; break;
    default: e.element.qp = static_cast<ibv_qp*>(obj); break;
    }
    [[maybe_unused]] ssize_t r = write(c.async_w, &e, sizeof e);
}

} // namespace metaroce::verbs
