// Context lifecycle and progress: one metaroce node per ibv_context (on the backend
// METAROCE_BACKEND names, backend.hpp), driven by a progress thread and by the
// application's own ibv_poll_cq (both under c.mu: the core endpoint is not
// thread-safe).
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "verbs/context.hpp"

namespace metaroce::verbs {

namespace {

constexpr uint32_t k_ctl_slot = 32;     // bytes per control slot
constexpr uint32_t k_ctl_slots = 4096;  // slot 0 stays unused: the zero-length address

// Sleeps until woken (a post, a close), the next timer, or `max_ns`. `kicks` is what
// c.kicks read before the drive that found nothing to do: a wake() since then (its work
// was done after that drive looked) means drive again, not sleep. The store to
// `sleeping` and the load of `kicks` here, and wake()'s increment and load, are
// sequentially consistent, so one of the two sides always sees the other.
void nap(vcontext& c, uint64_t next_timer, uint64_t now, uint64_t max_ns, uint64_t kicks)
{
    // Nanosecond timeout: ACK delays and RTOs are microseconds.
    uint64_t sleep_ns = max_ns;
    if (next_timer != k_no_deadline) {
        sleep_ns = next_timer <= now ? 0 : std::min<uint64_t>(next_timer - now, sleep_ns);
    }
    const timespec ts{time_t(sleep_ns / 1'000'000'000), long(sleep_ns % 1'000'000'000)};
    c.sleeping.store(true);
    if (c.kicks.load() != kicks) {
        c.sleeping.store(false);
        return;
    }
    std::array<epoll_event, 4> ev;
    const int n = epoll_pwait2(c.epfd, ev.data(), int(ev.size()), &ts, nullptr);
    c.sleeping.store(false);
    for (int i = 0; i < n; ++i) {
        if (ev[size_t(i)].data.fd == c.wakefd) {
            uint64_t v;
            [[maybe_unused]] ssize_t r = read(c.wakefd, &v, sizeof v);
        }
    }
}

void progress_loop(vcontext* c)
{
    c->node->thread_start();
    const bool poll_mode = c->node->wait_fd() < 0;
    if (poll_mode) {
        prctl(PR_SET_TIMERSLACK, 1000UL); // naps of microseconds, not the default 50 us more
    }
    int spins = 0;
    uint64_t idle_since = 0;
    uint64_t nap_ns = 0;
    while (!c->stop.load(std::memory_order_relaxed)) {
        uint64_t next = k_no_deadline;
        bool busy = false;
        bool work = false;
        const uint64_t kicks = c->kicks.load();
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
            idle_since = 0;
            nap_ns = 0;
            continue;
        }
        const uint64_t now = now_ns();
        const bool app_polling = now - c->app_poll_ns.load(std::memory_order_relaxed) < 200'000;
        if (poll_mode) {
            // A DPDK port signals nothing: busy-poll while work is outstanding (unless
            // the application's ibv_poll_cq drives) and for 200 us after the last
            // packet; then nap, 10 us first, doubling to the backend's maximum.
            if (idle_since == 0) {
                idle_since = now;
            }
            if ((work && !app_polling) || now - idle_since < 200'000) {
                continue;
            }
            nap_ns = std::min<uint64_t>(nap_ns == 0 ? 10'000 : nap_ns * 2, c->node->max_idle_nap_ns());
            nap(*c, next, now, nap_ns, kicks);
            continue;
        }
        // Busy-poll a little while work is outstanding and the application is not
        // polling itself; then sleep on the sockets with the next timer as timeout.
        if (work && !app_polling && ++spins < 200) {
            continue;
        }
        spins = 0;
        nap(*c, next, now, 100'000'000, kicks);
    }
    c->node->thread_stop();
}

} // namespace

uint64_t now_ns() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

void logf(const vcontext& c, const char* fmt, ...)
{
    if (!c.st.log) {
        return;
    }
    char buf[2048]; // the counters line at METAROCE_LOG=2 is long
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    // CLOCK_MONOTONIC seconds: the logs of two processes on one host interleave by it.
    const uint64_t t = now_ns();
    std::fprintf(stderr, "metaroce[%s] %llu.%06llu: %s\n", format_ipv4(c.addr).c_str(),
                 (unsigned long long)(t / 1'000'000'000), (unsigned long long)(t % 1'000'000'000 / 1000), buf);
}

vhandle* handle_of(ibv_context* ctx) noexcept
{
    // vctx is vhandle's first member, and the context the last of vctx.
    return reinterpret_cast<vhandle*>(verbs_get_ctx(ctx));
}

vcontext* ctx_of(ibv_context* ctx) noexcept { return handle_of(ctx)->owner; }

bool is_ours(const ibv_context* ctx) noexcept
{
    return ctx != nullptr && ctx->device == our_device();
}

namespace {

// The nodes this process has open (ibv_open_device), for a second open to share.
std::mutex g_open_mu;
std::vector<vcontext*> g_open;

bool same_node(const settings& a, const settings& b)
{
    return a.plane_addrs == b.plane_addrs && a.port == b.port && a.backend == b.backend;
}

// A handle's own context: the ops, the async event pipe. false (and why) on failure.
bool init_handle(vhandle& h, vcontext& owner, std::string& err)
{
    int async[2];
    if (pipe2(async, O_CLOEXEC) != 0) {
        err = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    fcntl(async[1], F_SETFL, O_NONBLOCK);
    // No kernel command channel: a descriptor of our own stands in, so programs that
    // dup() it to share the context get a valid one, and ibv_import_device knows it.
    const int cmd = memfd_create("metaroce-cmd", MFD_CLOEXEC);
    if (cmd < 0) {
        err = std::string("memfd_create: ") + std::strerror(errno);
        close(async[0]);
        close(async[1]);
        return false;
    }
    h.owner = &owner;
    h.async_w = async[1];
    ibv_context& ctx = h.vctx.context;
    ctx.device = our_device();
    ctx.cmd_fd = cmd;
    ctx.async_fd = async[0];
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    h.vctx.sz = sizeof(verbs_context);
    install_context_ops(h.vctx);
    return true;
}

void close_handle(vhandle& h)
{
    close(h.vctx.context.cmd_fd);
    close(h.vctx.context.async_fd);
    close(h.async_w);
}

} // namespace

ibv_context* open_device(std::string& err)
{
    settings st = load_settings();
    if (!st.error.empty()) {
        err = st.error;
        return nullptr;
    }
    if (const uint16_t paths = g_paths_override.load(); paths != 0) {
        st.paths = paths; // metaroce_set_paths (verbs_ext.h)
    }
    std::lock_guard<std::mutex> g(g_open_mu);
    const auto same = std::find_if(g_open.begin(), g_open.end(),
                                   [&](const vcontext* o) { return same_node(o->st, st); });
    if (same != g_open.end() && (*same)->parked) {
        // The node the last close kept (its backend cannot be made again): this open is
        // its first handle again, and its progress thread runs again.
        vcontext* c = *same;
        if (!init_handle(*c, *c, err)) {
            return nullptr;
        }
        c->handles.push_back(c);
        c->parked = false;
        c->stop.store(false);
        c->progress = std::thread(progress_loop, c);
        logf(*c, "opened metaroce0 again on %s:%u", format_ipv4(c->addr).c_str(), c->st.port);
        return &c->vctx.context;
    }
    if (same != g_open.end()) {
        vcontext* c = *same;
        auto h = std::make_unique<vhandle>();
        if (!init_handle(*h, *c, err)) {
            return nullptr;
        }
        std::lock_guard<std::mutex> cg(c->mu);
        c->handles.push_back(h.get());
        logf(*c, "opened metaroce0 again (%zu contexts on this node)", c->handles.size());
        return &h.release()->vctx.context;
    }
    vcontext* c = open_context(std::move(st), err);
    if (c == nullptr) {
        return nullptr;
    }
    g_open.push_back(c);
    return &c->vctx.context;
}

bool is_our_cmd_fd(int fd)
{
    struct stat a{};
    if (fstat(fd, &a) != 0) {
        return false;
    }
    std::lock_guard<std::mutex> g(g_open_mu);
    for (vcontext* c : g_open) {
        std::lock_guard<std::mutex> cg(c->mu);
        for (const vhandle* h : c->handles) {
            struct stat b{};
            if (fstat(h->vctx.context.cmd_fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                return true;
            }
        }
    }
    return false;
}

int close_device(ibv_context* ctx)
{
    vhandle* h = handle_of(ctx);
    vcontext* c = h->owner;
    {
        std::lock_guard<std::mutex> g(g_open_mu);
        bool last = false;
        {
            std::lock_guard<std::mutex> cg(c->mu); // post_async walks the handles
            c->handles.erase(std::find(c->handles.begin(), c->handles.end(), h));
            last = c->handles.empty();
        }
        // The first handle's memory is the node's own: it stays with the node.
        close_handle(*h);
        if (h != c) {
            delete h;
        }
        if (!last) {
            return 0; // the node stays for the other handles
        }
        if (!c->node->remakeable()) {
            quiesce(c);
            c->parked = true;
            return 0;
        }
        g_open.erase(std::find(g_open.begin(), g_open.end(), c));
    }
    close_context(c);
    return 0;
}

vcontext* open_context(settings st, std::string& err)
{
    auto c = std::make_unique<vcontext>();
    c->st = std::move(st);
    c->node = make_backend(c->st, err);
    if (!c->node) {
        return nullptr;
    }
    c->planes = c->node->plane_addrs();
    c->addr = c->planes[0];
    c->ctl_mem.assign(size_t(k_ctl_slot) * k_ctl_slots, 0);
    auto mr = c->node->ep().memory().register_region(c->ctl_mem.data(), c->ctl_mem.size(),
                                                     access::local_write);
    if (!mr) {
        err = "cannot register the control area";
        return nullptr;
    }
    c->ctl_lkey = mr->lkey;
    c->node->mem_added(c->ctl_mem.data(), c->ctl_mem.size()); // BINDs sent in place
    for (uint32_t s = k_ctl_slots - 1; s >= 1; --s) {
        c->ctl_free_tx.push_back(s);
    }
    if (!init_handle(*c, *c, err)) {
        return nullptr;
    }
    c->handles.push_back(c.get());
    c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (const int fd = c->node->wait_fd(); fd >= 0) {
        ev.data.fd = fd;
        epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    ev.data.fd = c->wakefd;
    epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wakefd, &ev);

    vcontext* raw = c.release();
    raw->progress = std::thread(progress_loop, raw);
    logf(*raw, "opened metaroce0 on %s:%u", format_ipv4(raw->addr).c_str(), raw->st.port);
    return raw;
}

void close_context(vcontext* c)
{
    quiesce(c);
    close(c->wakefd);
    close(c->epfd);
    // The node first: its worker flushes frames that may refer to the control area in
    // place (DPDK zero copy), which the context's other members hold.
    c->node.reset();
    delete c;
}

void quiesce(vcontext* c)
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
        const counters& k = c->node->ep().stats();
        // The resends split by what triggered them, and how many proved needless.
        logf(*c, "closing: %llu packets sent (%llu data, %llu retransmitted: %llu RTOs, %llu tail probes, "
             "%llu RACK, %llu needless), %llu received (%llu duplicates, %llu RNR)",
             (unsigned long long)k.tx_packets, (unsigned long long)k.tx_data_packets,
             (unsigned long long)k.retransmits, (unsigned long long)k.timeouts,
             (unsigned long long)k.tail_probes, (unsigned long long)k.rack_losses,
             (unsigned long long)k.spurious_retx, (unsigned long long)k.rx_packets,
             (unsigned long long)k.rx_duplicates, (unsigned long long)k.rx_rnr);
        if (c->st.log >= 2) {
            std::string all;
            for_each_counter(k, counter_fields(), [&](const std::string& n, uint64_t v, std::string_view) {
                if (v != 0) {
                    all += " " + n + "=" + std::to_string(v);
                }
            });
            logf(*c, "closing: counters%s", all.c_str());
        }
        if (const std::string note = c->node->log_note(); !note.empty()) {
            logf(*c, "closing: %s", note.c_str());
        }
        // No CLOSE: in Verbs a QP going away is invisible to its peer until the peer
        // sends (and times out), while a closed connection would flush the receives
        // every other QP of the peer still has posted. Idle detection (spec 7.8)
        // frees the peer's side.
    }
}

void wake(vcontext& c) noexcept
{
    c.kicks.fetch_add(1);
    if (c.sleeping.load()) {
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
    std::array<recv_wanted, 16> wanted;
    for (size_t n; (n = ep.poll_recv_wanted(wanted)) > 0;) {
        busy = true;
        for (size_t i = 0; i < n; ++i) {
            on_recv_wanted(c, wanted[i]);
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
    // To the handle the object was created on; a port event to every handle.
    ibv_context* owner = nullptr;
    switch (type) {
    case IBV_EVENT_CQ_ERR:
        e.element.cq = static_cast<ibv_cq*>(obj);
        owner = e.element.cq->context;
        break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        e.element.srq = static_cast<ibv_srq*>(obj);
        owner = e.element.srq->context;
        break;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR: e.element.port_num = 1; break;
    default:
        e.element.qp = static_cast<ibv_qp*>(obj);
        owner = e.element.qp->context;
        break;
    }
    for (vhandle* h : c.handles) {
        if (owner == nullptr || owner == &h->vctx.context) {
            [[maybe_unused]] ssize_t r = write(h->async_w, &e, sizeof e);
        }
    }
}

} // namespace metaroce::verbs
