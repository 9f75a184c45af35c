// metaroce-conformance: checks the numbered rules of doc/spec.md against an
// implementation through packets alone.
//   metaroce-conformance --target core|dpdk|udp [--app PATH] [--report FILE]
//                        [--spec doc/spec.md] [-s SECTION] [-v]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "spec_rules.hpp"
#include "suite.hpp"

using namespace metaroce::conformance;

namespace {

struct options {
    std::string target = "core";
    std::string app;
    std::string report;
    std::string spec = "doc/spec.md";
    std::string section;
    bool verbose = false;
};

[[noreturn]] void usage(int rc)
{
    std::fprintf(rc == 0 ? stdout : stderr,
                 "usage: metaroce-conformance --target core|dpdk|udp [--app PATH] [--report FILE]\n"
                 "                            [--spec doc/spec.md] [-s SECTION] [-v]\n");
    std::exit(rc);
}

options parse(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                usage(2);
            }
            return argv[++i];
        };
        if (a == "--target") {
            o.target = value();
        } else if (a == "--app") {
            o.app = value();
        } else if (a == "--report") {
            o.report = value();
        } else if (a == "--spec") {
            o.spec = value();
        } else if (a == "-s" || a == "--section") {
            o.section = value();
        } else if (a == "-v") {
            o.verbose = true;
        } else if (a == "-h" || a == "--help") {
            usage(0);
        } else {
            std::fprintf(stderr, "unknown argument '%s'\n", a.c_str());
            usage(2);
        }
    }
    if (o.target != "core" && o.target != "dpdk" && o.target != "udp") {
        std::fprintf(stderr, "--target must be core, dpdk or udp\n");
        usage(2);
    }
    return o;
}

// "5.4" < "5.10" < "6.2" < "6.2a": numeric major, minor, then the letter.
std::tuple<int, int, std::string> rule_key(const std::string& id)
{
    int major = 0, minor = 0;
    char rest[8] = {};
    std::sscanf(id.c_str(), "%d.%d%7s", &major, &minor, rest);
    return {major, minor, rest};
}

bool selected(const test_case& t, const std::string& section)
{
    if (section.empty()) {
        return true;
    }
    for (const std::string& s : t.spec) {
        if (s == section || s.rfind(section + ".", 0) == 0) {
            return true;
        }
    }
    return false;
}

// Both to stdout and to the report file.
struct tee {
    std::FILE* file = nullptr;
    void line(const char* fmt, const std::string& a = "", const std::string& b = "",
              const std::string& c = "")
    {
        for (std::FILE* f : {stdout, file}) {
            if (f != nullptr) {
                std::fprintf(f, fmt, a.c_str(), b.c_str(), c.c_str());
                std::fflush(f);
            }
        }
    }
};

} // namespace

int main(int argc, char** argv)
{
    const options o = parse(argc, argv);
    std::vector<spec_rule> rules;
    try {
        rules = read_spec_rules(o.spec);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce-conformance: %s (give --spec)\n", e.what());
        return 2;
    }
    std::unique_ptr<target> tg;
    try {
        if (o.target == "core") {
            tg = make_core_target();
        } else {
            if (geteuid() != 0) {
                std::printf("SKIP: the %s target needs root (network namespaces, veth, AF_PACKET)\n",
                            o.target.c_str());
                return 77;
            }
            dpdk_options d;
            d.app = o.app;
            d.verbose = o.verbose;
            tg = o.target == "udp" ? make_udp_target(d) : make_dpdk_target(d);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "metaroce-conformance: cannot set up target %s: %s\n", o.target.c_str(),
                     e.what());
        return 2;
    }

    std::vector<test_case> tests = registry();
    for (test_case& t : tests) {
        std::sort(t.spec.begin(), t.spec.end(),
                  [](const std::string& a, const std::string& b) { return rule_key(a) < rule_key(b); });
    }
    std::stable_sort(tests.begin(), tests.end(), [](const test_case& a, const test_case& b) {
        if (a.audit != b.audit) {
            return b.audit;
        }
        return rule_key(a.spec.front()) < rule_key(b.spec.front());
    });

    tee out;
    if (!o.report.empty()) {
        out.file = std::fopen(o.report.c_str(), "w");
        if (out.file == nullptr) {
            std::fprintf(stderr, "metaroce-conformance: cannot write %s\n", o.report.c_str());
            return 2;
        }
    }
    out.line("metaroce conformance, target %s, spec %s\n", tg->name(), o.spec);
    tester pr(*tg, tg->caps().virtual_time ? 1 : 20);
    std::vector<test_result> results;
    size_t passed = 0, failed = 0, na = 0;
    for (const test_case& t : tests) {
        if (!selected(t, o.section)) {
            continue;
        }
        std::string refs;
        for (const std::string& s : t.spec) {
            refs += (refs.empty() ? "" : ",") + s;
        }
        test_result r{t.name, t.spec, outcome::pass};
        std::string why;
        tg->begin_test();
        ctx x(*tg, pr);
        try {
            t.fn(x);
        } catch (const test_failure& f) {
            r.result = outcome::fail;
            why = f.what;
        } catch (const not_applicable& n) {
            r.result = outcome::na;
            why = n.why;
        } catch (const std::exception& e) {
            r.result = outcome::fail;
            why = std::string("exception: ") + e.what();
        }
        try {
            pr.close_all();
        } catch (...) {
        }
        pr.conns.clear();
        tg->end_test();
        const char* tag = r.result == outcome::pass ? "PASS" : r.result == outcome::fail ? "FAIL" : "N/A";
        out.line("%s  spec %s  %s\n", tag, refs, t.name);
        if (!why.empty()) {
            out.line("      %s\n", why);
        }
        passed += r.result == outcome::pass;
        failed += r.result == outcome::fail;
        na += r.result == outcome::na;
        results.push_back(r);
    }
    char summary[128];
    std::snprintf(summary, sizeof summary, "%zu passed, %zu failed, %zu not applicable", passed,
                  failed, na);
    out.line("%s\n", summary);
    std::vector<test_result> suite;
    for (const test_case& t : tests) {
        suite.push_back({t.name, t.spec, outcome::pass});
    }
    print_coverage(rules, suite, results, tg->name(), stdout);
    if (out.file != nullptr) {
        print_coverage(rules, suite, results, tg->name(), out.file);
        std::fclose(out.file);
    }
    return failed == 0 ? 0 : 1;
}
