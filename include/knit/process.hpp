// knit/process.hpp: process workers. Tasks registered by name (bytes in, bytes
// out) run in child processes, so a task that crashes (null write, abort, stack overflow, heap
// corruption) fails its own call with errc::worker_crashed and the host lives on.
//
// Design ("proxy"): each pool worker thread fronts one child process of its own. A process task
// is an ordinary knit call (deadlines, cancellation, admission, stats and shutdown keep their
// meaning) whose function, on the worker thread, hands the bytes to that thread's child
// through shared memory and waits for its answer or its death. The protocol, what it protects
// against and what not: docs/process-workers.md.
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

/// What a worker process may do (process_options::sandbox).
enum class process_sandbox {
  off,     ///< Nothing beyond the process boundary (and the closed fds).
  strict,  ///< A seccomp filter, no new privileges, no core dumps, few open files
           ///< (docs/process-workers.md says what it allows and refuses).
};

/// @brief The policy of every process worker: arena bound, crash-loop detection, backoff,
/// sandbox.
struct KNIT_API process_options {
  /// Bytes of each of a child's two arenas (request, answer). A request over it fails with
  /// errc::payload_too_large before anything is sent; an answer over it fails the same way.
  std::size_t arena_bytes = std::size_t{1} << 20;
  /// How many calls one host may have in one child at once, 1 .. 8: the one it runs and
  /// those queued behind it in its mapping, which it starts as soon as it answers the one
  /// before, without waiting for the host (the host ring fills them; a worker thread's
  /// proxy sends one at a time). Each lane has its own pair of arenas: a child's mapping is
  /// 4 KiB + lanes x 2 x arena_bytes of address space, of which only the pages calls write
  /// take memory.
  unsigned lanes = 2;
  /// Crash loop: this many crashes of one worker's children within crash_loop_window make
  /// it degraded, and each respawn then waits (backoff).
  unsigned crash_loop_crashes = 5;
  /// The window of the crash-loop count (T).
  std::chrono::milliseconds crash_loop_window{10'000};
  /// The first wait of a degraded worker before its respawn; doubled at each further crash
  /// within the window, up to backoff_max.
  std::chrono::milliseconds backoff_initial{100};
  /// The longest wait before a respawn.
  std::chrono::milliseconds backoff_max{5'000};
  /// How long the host's worker thread spins for an answer, and a child for the next
  /// request, before sleeping in poll, so a reply within it costs neither side a syscall.
  /// Only where the process may run on more than one CPU (on one, the other side cannot run
  /// while we spin). At most 1 s; 0 = never spin.
  std::chrono::microseconds spin{20};
  /// How long a new child has to finish its handshake.
  std::chrono::milliseconds start_timeout{5'000};
  /// The program a child runs: this same binary by default; it must call worker_main.
  std::string worker_executable = "/proc/self/exe";
  /// strict: the child installs a seccomp filter as the last step of its handshake (a child
  /// that cannot fails its start); a refused system call ends the child and fails its call
  /// with errc::sandbox_violation naming the call. Also PR_SET_NO_NEW_PRIVS, RLIMIT_CORE 0
  /// and RLIMIT_NOFILE open_files.
  process_sandbox sandbox = process_sandbox::off;
  /// The address space a child may add after its handshake (RLIMIT_AS = its size then plus
  /// this), in bytes; 0 = no limit. A task whose allocation fails under it (std::bad_alloc)
  /// fails its call with errc::memory_limit and its child is replaced.
  std::size_t memory_limit = 0;
  /// RLIMIT_NOFILE of a sandboxed child (its own fds included), 8 .. 65536.
  unsigned open_files = 64;
  /// The host <-> child ring (docs/process-workers.md, "The host ring"): each pool host
  /// (the pool's builder, a pool_host, an asio_host) talks to children of its own (as many
  /// as the pool has worker threads) through their shared mappings, with no pool worker
  /// thread forwarding the call; the host's completion_fd() then becomes an epoll fd that
  /// also fires when a child answers or dies. Read when a host attaches (the pool's
  /// constructor for its builder). On by default. false: the proxy path (each worker
  /// thread forwards its process calls to a child of its own, one at a time). The
  /// environment variable KNIT_PROCESS_HOST_RING, when set, decides instead: 1 on, 0 off;
  /// any other value is ignored, with one line on stderr saying so.
  bool host_ring = true;
  /// A spare child per worker: once a worker's child is taken for calls, one more is
  /// started off the request path and kept handshaken and idle, so a crash or a kill is
  /// replaced by a child that is already up (no spawn between the death and the next
  /// answer), and a new spare is started at once (after the crash-loop backoff). It costs
  /// one idle process per worker (its memory; no CPU while idle), counted in children_live.
  /// Off by default.
  bool spare_child = false;

  /// @throws config_error naming the first bad field.
  void validate() const;
};

/// Sets the process options. A worker thread reads them when it starts its first child (or
/// process_workers when it starts its children); a worker already running keeps the options
/// it started with.
/// @throws config_error when `options.validate()` does.
KNIT_API void set_process_options(const process_options& options);
/// The options set_process_options() set last (the defaults before that).
KNIT_API process_options current_process_options();

/// @brief Worker processes started ahead of traffic: the constructor starts `count` children
/// (one per pool worker thread: process_workers(pool)) and returns only once every one has
/// finished its handshake, so no call pays a spawn and a worker that cannot start is found
/// before any traffic. Each worker thread's first process task takes one of these children
/// (a thread that finds none left starts its own, as before); after a crash or a kill the
/// replacement is started at once off the request path (after the crash-loop backoff).
/// Destroying it ends the children no worker thread has taken; a taken child belongs to its
/// thread and ends with it (the pool's shutdown).
class KNIT_API process_workers {
 public:
  /// Starts `count` (1 .. 1024) worker processes with current_process_options().
  /// @throws process_error (errc::worker_start_failed) naming the first worker that could not
  /// start and why (every other one is ended first); config_error for a bad `count`.
  explicit process_workers(unsigned count);
  /// One worker process per worker thread of `pool` (pool_options::threads).
  explicit process_workers(const pool& pool) : process_workers(pool.options().threads) {}
  ~process_workers();
  process_workers(const process_workers&) = delete;
  process_workers& operator=(const process_workers&) = delete;

  /// How many were started (the constructor's `count`).
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
  std::uint64_t degraded_workers = 0;  ///< Worker threads now in a crash loop (backing off).
  std::uint64_t calls = 0;             ///< Calls that reached a child.
  std::uint64_t killed = 0;  ///< Children killed at a call's deadline or stuck limit (not crashes).
  /// Children started in place of one that crashed or was killed (on whichever worker
  /// thread starts one next: a stuck call's thread may have been retired).
  std::uint64_t respawned = 0;
  /// Children ended by their sandbox (a refused system call); not counted in crashes.
  std::uint64_t sandbox_kills = 0;
  /// Children replaced after a task went over the memory limit; not counted in crashes.
  std::uint64_t memory_limit_kills = 0;
  /// Calls given up (cancelled, past their deadline) while they waited in a child's lane
  /// behind another, that the child then answered without running them.
  std::uint64_t calls_withdrawn = 0;
};
/// A snapshot of the counters.
KNIT_API process_stats current_process_stats() noexcept;

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

/// @brief When the host kills the child running a call: at the call's deadline, or once the
/// child has had it for stuck_after, whichever comes first. A thread can only be abandoned
/// when its task runs too long; a child can be killed, so a looping task costs its CPU only
/// until then.
struct process_call_limits {
  /// The call's deadline (call_options::timeout from submit); max() = none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The call's stuck limit (call_options::stuck_after, else pool_options::stuck_after),
  /// counted from the moment the request reaches the child. Zero = none.
  std::chrono::steady_clock::duration stuck_after{0};
};

/// @brief Runs process task `name` on the calling thread's own child (started on first use,
/// restarted after a crash) and returns its answer. This is the function a process call runs
/// on a pool worker thread; a host never calls it on its own thread (it blocks). Past a
/// limit in `limits` the child is killed and reaped (the next call starts a replacement) and
/// the call fails with errc::timed_out (the deadline) or errc::stuck (the stuck limit).
/// @throws process_error (see its codes); std::invalid_argument for an unregistered name.
KNIT_API std::string run_process_task(std::string_view name, std::string_view bytes,
                                      const process_call_limits& limits = {});

/// True when `name` is a registered process task.
KNIT_API bool has_process_task(std::string_view name);

namespace detail {
/// @brief One process call as the host ring carries it (src/process/host_ring.hpp): the
/// task, its request bytes and limits, and, once the child answered, its answer or error.
/// Shared by the call's function (which runs it on a worker thread when no host ring takes
/// it) and the ring, both on one thread at a time.
struct process_job {
  std::string task;            ///< The task's name.
  std::string bytes;           ///< The request.
  process_call_limits limits;  ///< When the child is killed.
  bool answered = false;       ///< Set by the ring: answer or error holds the outcome.
  std::string answer;          ///< The answer, when answered without error.
  std::exception_ptr error;    ///< The process_error, when answered with one.
};
/// Whether a host ring exists in this process (submit_process then offers its jobs).
KNIT_API bool host_rings_live() noexcept;
/// Offers `job` to the host_state the next submit on this thread enqueues (null withdraws).
KNIT_API void offer_process_job(std::shared_ptr<process_job> job) noexcept;
/// The call's function: the ring's outcome when a ring ran it, else run_process_task here.
KNIT_API std::string run_process_job(process_job& job);
}  // namespace detail

/// @brief A pool's result for a process call, with the process error's code in front: a
/// process_error thrown by run_process_task reaches the pool as errc::task_failed; this
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
}  // namespace detail

/// @brief The limits past which a process call submitted now with `options` through `host`
/// has its child killed: the call's deadline, and its stuck limit (the call's own, else the
/// pool's). submit_process uses it.
template <class Host>
process_call_limits process_limits_for(Host& host, const call_options& options) {
  process_call_limits limits;
  if (options.timeout.count() > 0)
    limits.deadline = std::chrono::steady_clock::now() + options.timeout;
  limits.stuck_after =
      options.stuck_after.count() > 0
          ? options.stuck_after
          : std::chrono::steady_clock::duration(detail::pool_of(host).options().stuck_after);
  return limits;
}

/// @brief Submits process task `task` with `bytes` through `host` (a knit::pool, pool_host or
/// asio_host: anything with pool's submit). `handler(knit::result<std::string>)` runs on the
/// host's thread as for any call; a crash gives it errc::worker_crashed, with
/// failure_message() naming the task, the pid and the signal or exit code. A call that runs
/// past its deadline or its stuck limit gets errc::timed_out or errc::stuck as any call
/// does, and its child is killed and replaced (process_call_limits).
/// Returns what submit returns (queue_full, shut_down: the handler is then not called).
/// @throws std::invalid_argument for an unregistered task name (before anything is queued).
template <class Host, class Handler>
std::error_code submit_process(Host& host, std::string task, std::string bytes, Handler&& handler,
                               call_options options = {}, call_id* id = nullptr) {
  if (!has_process_task(task)) {
    throw std::invalid_argument("knit::submit_process: no process task named '" + task + "'");
  }
  const process_call_limits limits = process_limits_for(host, options);
  if (detail::host_rings_live()) {
    // The host ring's path: the job rides in the call's function; the host that enqueues
    // the call takes it from the offer (or, without a ring, a worker thread runs it).
    auto job = std::make_shared<detail::process_job>();
    job->task = std::move(task);
    job->bytes = std::move(bytes);
    job->limits = limits;
    detail::offer_process_job(job);
    // Withdrawn however submit ends (a throw included): no later submit may take it.
    struct withdraw {
      ~withdraw() { detail::offer_process_job(nullptr); }
    } withdraw_offer;
    return host.submit([job](std::string) { return detail::run_process_job(*job); }, std::string(),
                       [h = std::forward<Handler>(handler)](result<std::string> r) mutable {
                         h(process_result(std::move(r)));
                       },
                       options, id);
  }
  return host.submit([task = std::move(task),
                      limits](std::string in) { return run_process_task(task, in, limits); },
                     std::move(bytes),
                     [h = std::forward<Handler>(handler)](result<std::string> r) mutable {
                       h(process_result(std::move(r)));
                     },
                     options, id);
}

}  // namespace knit
