// The numbered rules of doc/spec.md, read at run time so the coverage report always
// matches the spec as it is now.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace metaroce::conformance {

struct spec_rule {
    std::string id;     // "5.4", "6.2a"
    std::string title;  // the start of its text
};

// Throws std::runtime_error if the file cannot be read.
std::vector<spec_rule> read_spec_rules(const std::string& path);

enum class outcome { pass, fail, na };

struct test_result {
    std::string name;
    std::vector<std::string> spec;
    outcome result = outcome::pass;
};

// Prints the coverage table: which rules the suite's tests cite (`suite`, results
// unused) and how the tests that ran (`results`) ended. Returns the rules no test cites.
std::vector<std::string> print_coverage(const std::vector<spec_rule>& rules,
                                        const std::vector<test_result>& suite,
                                        const std::vector<test_result>& results,
                                        const std::string& target, std::FILE* out);

} // namespace metaroce::conformance
