// Test registration and the context every conformance test runs with.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "target.hpp"
#include "tester.hpp"

namespace metaroce::conformance {

class ctx {
public:
    ctx(target& tg, tester& pr) : t(tg), p(pr) {}
    target& t;
    tester& p;

    bool exact() const { return t.caps().virtual_time; }
    void check(bool cond, const std::string& what) const
    {
        if (!cond) {
            throw test_failure{what};
        }
    }
    [[noreturn]] void fail(const std::string& what) const { throw test_failure{what}; }
    [[noreturn]] void na(const std::string& why) const { throw not_applicable{why}; }
    void need_virtual_time() const
    {
        if (!exact()) {
            na("needs a virtual clock to check timing exactly");
        }
    }

    // A region on the IUT, zero-filled.
    region mr(uint64_t len, uint32_t access);
    region rw_mr(uint64_t len) { return mr(len, access::local_write | access::remote_write | access::remote_read); }
    std::vector<uint8_t> mem(const region& r, uint64_t off, uint64_t len);
    void fill(const region& r, uint64_t off, const std::vector<uint8_t>& bytes);
    void post_recv(const tconn& c, uint16_t stream, const region& r, uint64_t off, uint32_t len,
                   uint64_t wr_id);
    void post_send(const tconn& c, const send_req& s);

    // Completions: every one seen during the test, in order.
    std::vector<completion> cq;
    void poll();
    // Waits (handling packets) until a completion with wr_id shows up.
    completion wait_wc(uint64_t wr_id, uint64_t timeout_ns);
    const completion* find_wc(uint64_t wr_id) const;
    // Polls once more and says whether wr_id has completed.
    bool completed(uint64_t wr_id);
    // Waits until `pred` holds on the IUT's connection state (nullopt: gone).
    bool wait_state(conn_id c, const std::function<bool(std::optional<conn_state>)>& pred,
                    uint64_t timeout_ns);

    // A counter delta check where the target exposes counters (else no-op).
    struct counter_mark {
        std::string name;
        std::optional<uint64_t> before;
    };
    counter_mark mark(const std::string& name) { return {name, t.counter(name)}; }
    void check_counted(const counter_mark& m, uint64_t at_least = 1);
};

struct test_case {
    std::string name;
    std::vector<std::string> spec;  // rules it checks ("5.4")
    std::function<void(ctx&)> fn;
    bool audit = false;             // runs after every other test (it reads their traffic)
};

std::vector<test_case>& registry();

struct registrar {
    registrar(const char* name, std::vector<std::string> spec, void (*fn)(ctx&), bool audit = false)
    {
        registry().push_back({name, std::move(spec), fn, audit});
    }
};

#define CONF_CAT2(a, b) a##b
#define CONF_CAT(a, b) CONF_CAT2(a, b)
// CONFORMANCE_TEST(name, "5.4", "3.6") { ... uses `x` (ctx&) ... }
#define CONFORMANCE_TEST(name, ...)                                                          \
    static void CONF_CAT(conf_fn_, name)(::metaroce::conformance::ctx & x);               \
    static ::metaroce::conformance::registrar CONF_CAT(conf_reg_, name)(#name, {__VA_ARGS__}, \
                                                                         &CONF_CAT(conf_fn_, name)); \
    static void CONF_CAT(conf_fn_, name)(::metaroce::conformance::ctx & x)
#define CONFORMANCE_AUDIT(name, ...)                                                         \
    static void CONF_CAT(conf_fn_, name)(::metaroce::conformance::ctx & x);               \
    static ::metaroce::conformance::registrar CONF_CAT(conf_reg_, name)(#name, {__VA_ARGS__}, \
                                                                         &CONF_CAT(conf_fn_, name), true); \
    static void CONF_CAT(conf_fn_, name)(::metaroce::conformance::ctx & x)

} // namespace metaroce::conformance
