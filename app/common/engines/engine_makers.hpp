// One maker per engine file; make_engine() picks one.
#pragma once

#include <memory>

#include "engines/engine.hpp"

namespace metaroce::engines {

std::unique_ptr<engine> make_write_bw(role r);
std::unique_ptr<engine> make_send_bw(role r);
std::unique_ptr<engine> make_read_bw(role r);
std::unique_ptr<engine> make_write_lat(role r);
std::unique_ptr<engine> make_send_lat(role r);

} // namespace metaroce::engines
