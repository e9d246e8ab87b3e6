// KNIT_ISOLATION=process: /ssr and /jwt in worker processes. The server registers one process
// task, the heavy call (heavy_wire.hpp's bytes in, bytes out), first thing in main, in the
// host and in every worker (the same binary re-executed by knit in worker mode, whose
// /proc/PID/comm is knit-proc-N); a worker process serves in knit::worker_main and never
// returns to the server's main.
//
// What a client gets when a process call fails is heavy_outcome's table (heavy_outcome.hpp):
//   errc::worker_crashed       500: the worker process running the task died (a signal, an
//                              exit) or broke the protocol; the server and every other call
//                              live on, a replacement is started. Never 503: a balancer
//                              must not replay a request that kills workers.
//   errc::worker_start_failed  500: no worker process could be started for it.
//   errc::sandbox_violation    500: the task made a system call the worker's sandbox
//                              refuses; the worker process is replaced.
//   errc::memory_limit         500: the task went over the worker's memory limit; replaced.
//   errc::payload_too_large    500: the answer did not fit the worker's arena (cannot happen
//                              within kBodyLimit: heavy_process_options sizes the arena).
//   stuck, timed_out, cancelled, task_failed: what thread mode answers.
#pragma once

#include <string_view>

#include <knit/process.hpp>

#include "placement/heavy_job.hpp"
#include "telemetry/stats.hpp"

namespace knit_server {

inline constexpr std::string_view kHeavyProcessTask = "knit-server/heavy";

// Registers the heavy call as a process task. Call once, first in main, before
// knit::worker_main, in every mode (host and worker must agree on the registry).
void register_heavy_process_task();

// Test hooks of a worker process's start, read only in a worker (argv[1] is knit's worker
// marker), before knit::worker_main: KNIT_TEST_WORKER_START_DELAY_MS=N sleeps N ms first
// (a slow start), KNIT_TEST_WORKER_EXIT=N exits with code N instead (a worker that cannot
// start). The server tests use them; an operator never needs them (the settings table lists
// them as hidden rows: not in --help, not warned about).
void test_hook_worker_start(int argc, char** argv);

// The process options the heavy call needs, whatever the configuration: arenas sized for the
// largest request (kBodyLimit plus the job's header and secret) and the largest answer a
// kBodyLimit body can render to (every byte of a name escaped to 6 bytes, twice), rounded up.
// The settings (KNIT_WORKER_SANDBOX, KNIT_PROCESS_LANES, KNIT_WORKER_MEMORY_MB,
// KNIT_WORKER_SPARE) are applied on top by server/settings/server_settings.cpp, where the
// table says why the server's defaults differ from the library's.
knit::process_options heavy_process_options();

// The worker processes' counters now (knit::current_process_stats, process-wide), for the
// knit-stats line and /metrics.
worker_process_figures worker_figures() noexcept;

}  // namespace knit_server
