// knit/process.hpp: process workers. Tasks registered by name (bytes in, bytes
// out) run in child processes, so a task that crashes (null write, abort, stack overflow, heap
// corruption) fails its own call with errc::worker_crashed and the host lives on.
//
// Design: each host of a pool (its builder, a pool_host, an asio_host) calls worker processes
// of its own through their shared mappings, with no worker thread between (the host's
// ring, src/process/process_ring.hpp). A process call is an ordinary knit call (deadlines,
// cancellation, admission, stats and shutdown keep their meaning). The protocol, the threat
// model and what the sandbox refuses: docs/process-workers.md.
//
// Use:
//   int main(int argc, char** argv) {
//     knit::register_process_task("render", [](std::string_view in) { return render(in); });
//     if (knit::worker_main(argc, argv)) return 0;  // never returns in a child
//     ...  // the host: a knit::pool, then knit::submit_process(pool, "render", body, handler)
//   }
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "knit/call.hpp"
#include "knit/error.hpp"
#include "knit/export.hpp"
#include "knit/pool.hpp"
#include "knit/process_options.hpp"
#include "knit/result.hpp"

namespace knit {

/// A process task: runs in a child process; gets the request bytes, returns the answer bytes.
/// An exception it throws fails its call with errc::task_failed (the message travels back).
using process_task = std::function<std::string(std::string_view)>;

/// @brief Registers a process task under `name`. Host and child must register the same tasks
/// in the same order (the same binary running the same code before worker_main does): the
/// start-up handshake compares the child's count and hash of the names with the host's and
/// fails with errc::worker_start_failed if they differ.
/// @throws std::logic_error after the registry was frozen (by the first child started, or
/// by worker_main in a child), or for a name already registered.
KNIT_API void register_process_task(std::string name, process_task fn);

/// @brief Worker processes started ahead of traffic: the constructor starts one child per
/// worker thread of `pool` (pool_options::threads) with the pool's process options, and
/// returns only once every one has finished its handshake, so no call pays a spawn and a
/// worker that cannot start is found before any traffic. The pool's hosts take these
/// children at their first process call (a host that finds none left starts its own).
/// Destroying it ends the children no host has taken; a taken child belongs to its host and
/// ends with it. Build it after the pool and destroy it before.
class KNIT_API process_workers {
 public:
  /// @throws process_error (errc::worker_start_failed) naming the first worker that could not
  /// start and why (every other one is ended first).
  explicit process_workers(const pool& pool);
  ~process_workers();
  process_workers(const process_workers&) = delete;
  process_workers& operator=(const process_workers&) = delete;

  /// How many were started (the pool's worker threads).
  unsigned count() const noexcept { return count_; }

 private:
  std::uint64_t batch_;
  unsigned count_;
};

/// @brief Counters over every process worker of this process (a snapshot).
struct KNIT_API process_stats {
  std::uint64_t children_started = 0;  ///< Children that finished their handshake.
  std::uint64_t children_live = 0;     ///< Children started and not yet reaped.
  std::uint64_t crashes = 0;           ///< Children that died or broke the protocol.
  std::uint64_t degraded_workers = 0;  ///< Workers now in a crash loop (backing off).
  /// Calls that reached a child, each counted once (a call sent again is in calls_resent).
  std::uint64_t calls = 0;
  std::uint64_t killed = 0;  ///< Children killed at a call's deadline or stuck limit (not crashes).
  /// Children started in place of one that crashed or was killed.
  std::uint64_t respawned = 0;
  /// Children ended by their sandbox (a refused system call); not counted in crashes.
  std::uint64_t sandbox_kills = 0;
  /// Children replaced after a task went over the memory limit; not counted in crashes.
  std::uint64_t memory_limit_kills = 0;
  /// Calls given up (cancelled, past their deadline) while they waited in a child's lane
  /// behind another, that the child then answered without running them.
  std::uint64_t calls_withdrawn = 0;
  /// Calls sent to a second child because the first died, was killed or broke the
  /// protocol before it started them (at most once each; never the call a child died
  /// running).
  std::uint64_t calls_resent = 0;
  /// Calls taken back from a child's lanes, where they waited behind a slow call, and sent
  /// to an idle child instead.
  std::uint64_t calls_moved = 0;
  /// Children killed because they woke their host more often than they answered (an answer
  /// bell rung with no answer), or broke the protocol; also counted in crashes.
  std::uint64_t protocol_kills = 0;
};
/// A snapshot of the counters.
KNIT_API process_stats current_process_stats() noexcept;

/// @brief How this process confines its strict worker processes (process_sandbox::strict),
/// known once one was started: the layers that apply on this kernel and under this service
/// manager (docs/process-workers.md, "Threat model").
struct KNIT_API process_confinement {
  /// Strict children start in new user, PID, mount and network namespaces. False until a
  /// strict child was started, and for good once the kernel refused them (why_not).
  bool namespaces = false;
  std::string why_not;  ///< Why not ("" while they are used or not yet tried).
  /// The host made itself undumpable before its first strict child: its /proc/PID/mem and
  /// environ need CAP_SYS_PTRACE over its user namespace, which no child holds.
  bool host_undumpable = false;
  /// "" when strict children see a /proc of their own, else why not.
  std::string private_proc_not;
};
/// A snapshot of the confinement.
KNIT_API process_confinement current_process_confinement();

/// @brief The error of a failed process task: code() is an errc (worker_crashed,
/// payload_too_large, worker_start_failed, task_failed, sandbox_violation, memory_limit),
/// what() names the task and, for a
/// crash, the child's pid and signal or exit code.
class KNIT_API process_error : public std::system_error {
 public:
  /// `what` becomes the start of what().
  process_error(errc code, const std::string& what);
};

/// @brief The child side. Call it first in main, after registering the process tasks: in the
/// host it returns false at once; in a child started by knit (marked by its argv) it serves
/// calls and never returns (the child exits when the host goes away).
KNIT_API bool worker_main(int argc, char** argv);

/// True when `name` is a registered process task.
KNIT_API bool has_process_task(std::string_view name);

namespace detail {
/// The argument of a process call's record (the bytes travel in its job).
struct process_arg {};

/// When the host kills the child running a call: at the call's deadline, or once the child
/// has had it for stuck_after (counted from the moment it starts running it), whichever
/// comes first.
struct process_call_limits {
  /// The call's deadline (call_options::timeout from submit); max() = none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The call's stuck limit (call_options::stuck_after, else pool_options::stuck_after).
  /// Zero = none.
  std::chrono::steady_clock::duration stuck_after{0};
};

/// One process call as its host's ring carries it (src/process/process_ring.hpp): the task,
/// its request bytes and limits, and, once the child answered, its answer or error. Owned
/// by the call's record and the ring, used on the host's thread only.
struct process_job {
  std::string task;            ///< The task's name.
  std::string bytes;           ///< The request.
  process_call_limits limits;  ///< When the child is killed.
  bool sent = false;           ///< Sent to a child at least once (counted in calls).
  bool resent = false;         ///< Sent again once already (a child died with it queued).
  std::string answer;          ///< The answer, when answered without error.
  std::exception_ptr error;    ///< The process_error, when answered with one.
};

/// The function of a process call's record: what the ring put in the job. The pool's
/// enqueue recognises it by type and hands the job to the host's ring (never to a worker
/// thread).
struct process_call_fn {
  std::shared_ptr<process_job> job;
  std::string operator()(process_arg) const {
    if (job->error) std::rethrow_exception(job->error);
    return std::move(job->answer);
  }
};
}  // namespace detail

/// @brief A pool's result for a process call, with the process error's code in front: a
/// process_error the ring hands to the call's record reaches the pool as errc::task_failed;
/// this
/// gives the result its own code (worker_crashed, ...), the process_error staying in
/// exception() for its what().
inline result<std::string> process_result(result<std::string> r) {
  if (r.ok() || r.error() != errc::task_failed || !r.exception()) return r;
  try {
    std::rethrow_exception(r.exception());
  } catch (const process_error& e) {
    return result<std::string>(e.code(), r.exception());
  } catch (...) {
  }
  return r;
}

/// What a failed result says: its exception's what() when it has one (for a process call,
/// the task, the pid and the signal or exit code), else error().message().
inline std::string failure_message(const result<std::string>& r) {
  if (r.exception()) {
    try {
      std::rethrow_exception(r.exception());
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
    }
  }
  return r.error().message();
}

namespace detail {
// The pool behind `host` (a knit::pool, or a pool_host / asio_host attached to one).
template <class Host>
const pool& pool_of(Host& host) {
  if constexpr (requires { host.get_pool(); }) {
    return host.get_pool();
  } else {
    return host;
  }
}

/// @brief The limits past which a process call submitted now with `options` through `host`
/// has its child killed: the call's deadline, and its stuck limit (the call's own, else the
/// pool's).
template <class Host>
process_call_limits process_limits_for(Host& host, const call_options& options) {
  process_call_limits limits;
  if (options.timeout.count() > 0)
    limits.deadline = std::chrono::steady_clock::now() + options.timeout;
  limits.stuck_after =
      options.stuck_after.count() > 0
          ? options.stuck_after
          : std::chrono::steady_clock::duration(pool_of(host).options().stuck_after);
  return limits;
}
}  // namespace detail

/// @brief Submits process task `task` with `bytes` through `host` (a knit::pool, pool_host or
/// asio_host: anything with pool's submit). The host's own ring sends it to one of the
/// pool's worker processes (no worker thread between). `handler(knit::result<std::string>)`
/// runs on the host's thread as for any call; a crash gives it errc::worker_crashed, with
/// failure_message() naming the task, the pid and the signal or exit code. A call that runs
/// past its deadline or its stuck limit gets errc::timed_out or errc::stuck as any call
/// does, and its child is killed and replaced.
/// Returns what submit returns (queue_full, shut_down: the handler is then not called).
/// @throws std::invalid_argument for an unregistered task name (before anything is queued);
/// std::logic_error when the pool was built before any process task was registered.
template <class Host, class Handler>
[[nodiscard]] std::error_code submit_process(Host& host, std::string task, std::string bytes,
                                             Handler&& handler, call_options options = {},
                                             call_id* id = nullptr) {
  if (!has_process_task(task)) {
    throw std::invalid_argument("knit::submit_process: no process task named '" + task + "'");
  }
  auto job = std::make_shared<detail::process_job>();
  job->task = std::move(task);
  job->bytes = std::move(bytes);
  job->limits = detail::process_limits_for(host, options);
  return host.submit(
      detail::process_call_fn{std::move(job)}, detail::process_arg{},
      [h = std::forward<Handler>(handler)](result<std::string> r) mutable {
        h(process_result(std::move(r)));
      },
      options, id);
}

}  // namespace knit
