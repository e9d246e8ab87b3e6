// The human-readable summary printed when no JSON is asked for on stdout.
#pragma once

#include <iosfwd>

#include "runner.hpp"

namespace knit_load {

void print_summary(std::ostream& out, const run_result& result);

}  // namespace knit_load
