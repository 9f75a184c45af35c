// The interactive prompt: DPDK cmdline instances generated from the command table,
// so Tab completes, '?' lists the choices with their help, and lines go to execute().
#pragma once

#include "app.hpp"

namespace metaroce::app {

// Reads commands from stdin until "quit" or the end of input.
void run_prompt(application& a);

} // namespace metaroce::app
