#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <stdexcept>

#include "spec_rules.hpp"

namespace metaroce::conformance {

std::vector<spec_rule> read_spec_rules(const std::string& path)
{
    std::ifstream f(path);
    if (!f) {
        throw std::runtime_error("cannot read " + path);
    }
    // A rule starts a line with its number: "5.4 **ACK generation.** ..." or "6.2a ...".
    static const std::regex k_rule(R"(^(\d+\.\d+[a-z]?)\s+(.*)$)");
    std::vector<spec_rule> rules;
    bool fenced = false;
    // A section whose heading is followed by "<!-- conformance: outside ... -->" binds
    // something other than the transport (the Verbs front end): its own suite checks it.
    bool outside = false;
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("```", 0) == 0) {
            fenced = !fenced;
            continue;
        }
        if (line.rfind("## ", 0) == 0) {
            outside = false;
        } else if (line.rfind("<!-- conformance: outside", 0) == 0) {
            outside = true;
        }
        std::smatch m;
        if (fenced || outside || !std::regex_match(line, m, k_rule)) {
            continue;
        }
        std::string title = m[2].str();
        std::string clean;
        for (char ch : title) {
            if (ch != '*' && ch != '`') {
                clean += ch;
            }
        }
        if (clean.size() > 60) {
            size_t cut = 57;
            while (cut > 0 && (uint8_t(clean[cut]) & 0xc0) == 0x80) {
                --cut; // not inside a UTF-8 sequence
            }
            clean = clean.substr(0, cut) + "...";
        }
        rules.push_back({m[1].str(), clean});
    }
    return rules;
}

namespace {

bool cites(const test_result& t, const std::string& id)
{
    for (const std::string& s : t.spec) {
        if (s == id) {
            return true;
        }
    }
    return false;
}

} // namespace

std::vector<std::string> print_coverage(const std::vector<spec_rule>& rules,
                                        const std::vector<test_result>& suite,
                                        const std::vector<test_result>& results,
                                        const std::string& target, std::FILE* out)
{
    std::vector<std::string> uncovered;
    size_t covered = 0;
    size_t exercised = 0;
    std::fprintf(out, "\nCoverage of the spec's numbered rules (target %s)\n", target.c_str());
    std::fprintf(out, "%-6s %-5s %-6s %-4s %-4s  %s\n", "rule", "tests", "pass", "fail", "n/a", "rule text");
    for (const spec_rule& r : rules) {
        size_t n = 0, pass = 0, fail = 0, na = 0;
        for (const test_result& t : suite) {
            n += cites(t, r.id);
        }
        for (const test_result& t : results) {
            if (cites(t, r.id)) {
                pass += t.result == outcome::pass;
                fail += t.result == outcome::fail;
                na += t.result == outcome::na;
            }
        }
        if (n == 0) {
            uncovered.push_back(r.id);
        } else {
            ++covered;
        }
        exercised += pass + fail > 0;
        std::fprintf(out, "%-6s %-5zu %-6zu %-4zu %-4zu  %s%s\n", r.id.c_str(), n, pass, fail, na,
                     n == 0 ? "UNCOVERED  " : "", r.title.c_str());
    }
    // Tests citing a rule the spec no longer has: a renumbering the suite missed.
    for (const test_result& t : suite) {
        for (const std::string& s : t.spec) {
            bool known = false;
            for (const spec_rule& r : rules) {
                known = known || r.id == s;
            }
            if (!known) {
                std::fprintf(out, "warning: test %s cites spec %s, which the spec does not have\n",
                             t.name.c_str(), s.c_str());
            }
        }
    }
    std::fprintf(out, "\ncovered %zu/%zu rules (exercised on target %s in this run: %zu/%zu)\n", covered,
                 rules.size(), target.c_str(), exercised, rules.size());
    std::fprintf(out, "uncovered:");
    for (const std::string& u : uncovered) {
        std::fprintf(out, " %s", u.c_str());
    }
    std::fprintf(out, "%s\n", uncovered.empty() ? " none" : "");
    return uncovered;
}

} // namespace metaroce::conformance
