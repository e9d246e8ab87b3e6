// pool_stats: the pool's always-on counters (per worker, plus the host's own), and to_json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "knit/detail/worker_counters.hpp"
#include "knit/export.hpp"

namespace knit {

/// @brief One worker seat's counters, as copied by pool::stats() (or, in pool_stats::lent,
/// every lent worker's together).
///
/// Each is written only by its worker (relaxed), so keeping them costs the worker nothing
/// but a private cache line. They only grow; the pool never resets them.
struct worker_stats {
  // One std::uint64_t field per counter (calls_run, calls_stolen, ..., sched_failures),
  // each named and described in the one list of them, knit/detail/worker_counters.hpp.
#define KNIT_WORKER_STATS_FIELD(name, description) std::uint64_t name = 0;
  KNIT_WORKER_COUNTERS(KNIT_WORKER_STATS_FIELD)
#undef KNIT_WORKER_STATS_FIELD
};

/// @brief One host's counters (a thread attached with pool_host or asio_host, or the
/// building thread's own attachment). Each is written only by its host thread.
struct host_stats {
  unsigned index = 0;                    ///< The host's index (pool_host::index()).
  std::uint64_t calls_submitted = 0;     ///< Calls accepted by submit().
  std::uint64_t calls_completed = 0;     ///< Handlers called, any outcome.
  std::uint64_t calls_rejected = 0;      ///< submit() refusals.
  std::uint64_t calls_backlogged = 0;    ///< Calls that waited in the host's backlog.
  std::uint64_t calls_cancelled = 0;     ///< Handlers given errc::cancelled.
  std::uint64_t calls_timed_out = 0;     ///< Handlers given errc::timed_out.
  std::uint64_t calls_failed = 0;        ///< Tasks that threw.
  std::uint64_t calls_stuck = 0;         ///< Running calls this host declared stuck.
  std::uint64_t host_wakes = 0;          ///< FUTEX_WAKE syscalls issued by this host.
  std::uint64_t completion_batches = 0;  ///< drain() rounds that found at least one result.
};

/// @brief A snapshot of a pool's counters: every host's together, plus one worker_stats per
/// worker, plus (with two hosts or more) one host_stats per host.
///
/// Returned by pool::stats(); to_json() renders it. The host-side fields are the sums over
/// every host that ever used the pool (each index: an index's counts carry over to the
/// next thread that attaches there). Counters only grow, except
/// retired_running and lent_workers_now, which are levels.
struct KNIT_API pool_stats {
  unsigned threads = 0;  ///< Worker seats (pool_options::threads).
  // Host side.
  std::uint64_t calls_submitted = 0;   ///< Calls accepted by submit().
  std::uint64_t calls_completed = 0;   ///< Handlers called, any outcome.
  std::uint64_t calls_rejected = 0;    ///< submit() refusals (errc::queue_full, errc::shut_down).
  std::uint64_t calls_backlogged = 0;  ///< Calls that waited in the host backlog (every ring full).
  std::uint64_t calls_cancelled = 0;   ///< Handlers given errc::cancelled (cancel(), shutdown).
  std::uint64_t calls_timed_out = 0;   ///< Handlers given errc::timed_out (call_options::timeout).
  std::uint64_t calls_failed = 0;      ///< Tasks that threw (handler given errc::task_failed).
  std::uint64_t host_wakes = 0;        ///< FUTEX_WAKE syscalls issued by the host.
  std::uint64_t completion_batches = 0;  ///< drain() rounds that found at least one result.
  /// Running calls given up on (stuck_after or shutdown's deadline), from any host: counted
  /// when that host retires their worker, or (a process call on the host ring) kills its
  /// child for its stuck limit.
  std::uint64_t calls_stuck = 0;
  std::uint64_t workers_replaced = 0;  ///< Retired workers whose seat got a fresh thread.
  std::uint64_t retired_running =
      0;  ///< Retired workers whose stuck task has not returned yet (a level, not a count).
  /// Lent workers (pool_options::lend_after) started while every worker was held by a long
  /// call and calls waited: threads, and worker processes of every host's own.
  std::uint64_t lent_workers_started = 0;
  /// Lent workers that ended: exited idle, or retired for a stuck call.
  std::uint64_t lent_workers_retired = 0;
  std::uint64_t lent_workers_now = 0;  ///< Lent workers alive now (a level, not a count).
  std::vector<worker_stats> workers;   ///< One per worker seat, in seat order; a replacement worker
                                       ///< continues its seat's counts.
  /// Every lent worker's counters together (they have no seat, so they are not in
  /// `workers`): the calls they ran, calls_stolen among them (a lent worker takes every
  /// call from a seat's ring), their completion signals. They only grow: a lent slot's
  /// counts go on from one lent thread to the next.
  worker_stats lent;

  /// Every host attached now, by index, while two hosts or more are (empty with one: its
  /// part is the fields above). to_json() lists them only when there are some.
  std::vector<host_stats> hosts;

  /// The sum of every worker's counters: the seats' (`workers`) and the lent ones' (`lent`),
  /// so that calls_run counts every call run while workers were lent.
  worker_stats totals() const;
};

/// @brief Renders `stats` as one line of JSON:
/// `{"threads":N,"totals":{...host and summed worker counters...},"workers":[{...},...]}`,
/// then `"lent":{...}` once the pool has lent a worker, and `"hosts":[...]` with two or more.
KNIT_API std::string to_json(const pool_stats& stats);

}  // namespace knit
