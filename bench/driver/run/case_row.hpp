// Builds the row of rows.jsonl for one measured case, rounded as the reference
// benchmark's rows were.
#pragma once

#include "driver/run/case_measure.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/run_options.hpp"

namespace knit::bench {

// Pure: the row for a case, rounded as the reference benchmark's drive.py rounds (idle_cores 3
// decimals, cores 2, rps_per_core / cpu_us_per_req / total_rps integers, route values 2).
// For an external peer, rps counts successful responses only (rps x success rate), so a
// peer answering 404 to a route it lacks adds nothing to its throughput.
result_row build_row(const plan_case& c, int rep, const case_measurement& m,
                     const run_options& cfg);

}  // namespace knit::bench
