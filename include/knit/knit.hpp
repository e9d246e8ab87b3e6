// knit: the map of the public headers.
#pragma once

/// @brief knit: a worker pool that keeps a single-threaded event loop fast when a few routes
/// are heavy. Start at knit::pool (core) or knit::asio_host and knit::async_run
/// (knit/asio.hpp, Boost.Asio).
namespace knit {}

#include "knit/call.hpp"        // call records and call_options (deadline)
#include "knit/error.hpp"       // knit::errc, config_error
#include "knit/job_ring.hpp"    // host -> worker ring: one producer, CAS-claiming consumers
#include "knit/log.hpp"         // set_log_sink: where the library's own diagnostics go
#include "knit/loop_slice.hpp"  // request_loop_slice(): a loop thread preempts a worker at once
#include "knit/options.hpp"     // pool_options, from_env(): pool shape and idle policy
#include "knit/pool.hpp"        // knit::pool: submit, drain, cancel, shutdown, stats
#include "knit/process.hpp"     // process workers: tasks by name in child processes
#include "knit/result.hpp"      // result<R>: value or error (+ exception)
#include "knit/stats.hpp"       // pool_stats and to_json
// knit/asio.hpp (not included here, so the core needs no Boost): asio_host, async_run.
