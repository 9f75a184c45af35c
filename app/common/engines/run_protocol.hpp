// The messages of a test run (see ctrl_msg.hpp), built and read in one place for both
// programs' hosts.
#pragma once

#include <optional>
#include <vector>

#include "engines/ctrl_msg.hpp"
#include "engines/engine.hpp"

namespace metaroce::engines {

// Active side. start: what the passive side needs to set itself up; echoes go to
// echo_va under rkey.
ctrl_msg start_msg(test_kind t, const engine_setup& s, uint64_t echo_va, uint32_t rkey);
// done: what the active engine completed.
ctrl_msg done_msg(const engine& active);
// more: lets the engine send what the passive side's receives still wait for.
void apply_more(engine& active, const ctrl_msg& more);

// Passive side. The test a start message names, if it is one.
std::optional<test_kind> test_of(const ctrl_msg& start);
// Fills in the run's parameters from start; base holds endpoint, connections and area.
engine_setup passive_setup(const ctrl_msg& start, engine_setup base);
// The answer to done: a `more` for every connection whose receives are still posted,
// else (checking the bytes when `check`) the verdict. The engine posts no new receive
// from now on.
std::vector<ctrl_msg> answer_done(engine& passive, const ctrl_msg& done, bool check);
// Bad bytes (and lengths) a verdict reports, and whether it compared anything.
struct verdict_info {
    uint64_t bad = 0;
    verdict_state state = verdict_state::not_checked;
};
verdict_info read_verdict(const ctrl_msg& v);

} // namespace metaroce::engines
