// Structured edits of a captured packet: one header field at a time, with values
// chosen near what the receiving endpoint expects (its PSNs, connection ids, region
// addresses and keys), so mutated packets get past the first checks.
#pragma once

#include <cstdint>
#include <vector>

#include "endpoint_ops.hpp"
#include "fuzz_world.hpp"

namespace metaroce::fuzz {

// Applies one edit to a packet headed for side `to` of w (bytes and arrival metadata).
void edit_packet(world& w, int to, std::vector<uint8_t>& bytes, rx_meta& meta, field f, uint32_t v);

} // namespace metaroce::fuzz
