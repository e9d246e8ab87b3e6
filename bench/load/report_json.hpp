// The result JSON the benchmark driver reads (per-route objects shaped like oha's output).
#pragma once

#include <boost/json/object.hpp>

#include "histogram.hpp"
#include "runner.hpp"

namespace knit_load {

// {"p50","p90","p99","p99.9","max"} in seconds, as oha's latencyPercentiles.
boost::json::object percentiles_json(const latency_histogram& h);
boost::json::object route_json(const route_result& r, double duration_s);
boost::json::object to_json(const run_result& result);

}  // namespace knit_load
