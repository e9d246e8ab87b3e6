// knit::pool: the host thread hands calls to N worker threads and gets results back on its
// own thread. Public face and owner of the workers, rings, doorbells and backlog. Its
// threading contract, shutdown steps, stuck calls and exception safety are documented on
// class pool below.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "knit/call.hpp"
#include "knit/error.hpp"
#include "knit/export.hpp"
#include "knit/options.hpp"
#include "knit/result.hpp"
#include "knit/stats.hpp"

namespace knit {

/// How pool::shutdown() treats calls that are not finished.
enum class shutdown_mode {
  drain,   ///< Finish every accepted call, deliver every result.
  cancel,  ///< Calls not yet running fail with errc::cancelled; running ones finish.
};

/// @brief What pool::shutdown(mode, deadline) gave up on. All zero (and deadline_passed
/// false) when everything finished in time.
struct KNIT_API shutdown_report {
  bool deadline_passed = false;  ///< The deadline passed before every call was delivered.
  std::size_t cancelled_at_deadline =
      0;  ///< Calls not started by the deadline: errc::cancelled, never run.
  std::size_t abandoned_running =
      0;  ///< Calls running at the deadline: errc::cancelled, result discarded.
  std::size_t threads_detached =
      0;  ///< Retired workers still in their task (stuck or abandoned), detached,
          ///< never joined; each keeps its record and frees it if the task returns.
  /// One line for a log: what was cancelled, abandoned and detached.
  std::string describe() const;
};

namespace detail {
class pool_impl;
class host_state;
struct process_job;      // knit/process.hpp
struct process_call_fn;  // knit/process.hpp: a process call's function
}  // namespace detail

class pool_host;

/// @brief The host thread hands calls to N worker threads and gets results back on its
/// own thread.
///
/// **Threading contract.** The thread that constructs the pool is its host. submit,
/// cancel, drain, poll and shutdown must be called on the host thread; a call from any
/// other thread throws std::logic_error (checked, not assumed). pending, next_deadline and
/// call_time_estimate read host-only state unchecked: call them on the host thread too
/// (stats() on any host's thread: see "Many hosts"). Handlers always run on the host thread, inside
/// drain() (or shutdown(), which drains).
///
/// **Many hosts.** Other threads become hosts too, each for its own event loop, with
/// knit::pool_host or knit::asio_host (knit/pool_host.hpp: attaching, leaving, what is not
/// supported there yet). On such a thread submit, cancel, drain, poll, pending,
/// next_deadline, call_time_estimate, accepting and completion_fd act on that thread's own
/// host: its calls, its eventfd, its handlers (run only on it). The workers are shared,
/// and a worker with nothing of its own takes any host's queued call. stats() may be called
/// on any host's thread (the builder's or an attached one's): it reads only counters.
/// shutdown() stays the builder's, and the destructor may run on any thread; shutdown first
/// waits for the attached hosts to leave (knit/pool_host.hpp, "The pool's shutdown"). The
/// design: docs/many-hosts.md.
///
/// **Shutdown steps** (src/pool.cpp, shutdown()):
/// 1. stop accepting: later submit() returns errc::shut_down;
/// 2. cancel mode only: every call not yet running is abandoned and its handler gets
///    errc::cancelled;
/// 3. drain until every accepted call has been delivered AND every record has come back
///    from the workers (a record is never freed while a worker may hold it). With a
///    deadline, once it passes: calls not started are abandoned (errc::cancelled) and
///    running ones given up (errc::cancelled, result discarded) through worker retirement;
///    then the same for the attached hosts, each by its own leave on its own thread
///    (knit/pool_host.hpp, "The pool's shutdown"), counted in the same report;
/// 4. set `stopping`, ring every worker's doorbell (even with doorbell=false), join the
///    live workers; retired workers whose task has not returned are detached, never
///    joined, and their records left to them (src/worker_seats.cpp, "Retiring a worker").
///
/// Skipping 3 would free records a worker still holds; skipping the forced ring in 4 would
/// leave a worker parked forever and join() hanging.
///
/// **Stuck calls.** With stuck_after set (pool_options, or per call), drain() declares a
/// call that has run longer stuck: errc::stuck (or errc::timed_out if its deadline passed)
/// at once, a fresh worker takes the seat, the queued calls move on. next_deadline()
/// includes the moment a running call would become stuck, so a host timer on it notices.
///
/// **Exception safety.** submit gives the strong guarantee for the pool (on bad_alloc
/// nothing is counted, queued or leaked; fn, arg and handler, if already moved in, are
/// destroyed) and rethrows. drain never allocates for delivery; a handler that throws
/// terminates (it is called from a noexcept function).
class KNIT_API pool {
 public:
  /// Starts options.threads workers; the calling thread becomes the host.
  /// @throws config_error for invalid options (pool_options::validate()).
  explicit pool(pool_options options = {});
  /// shutdown(drain, now + options.stop_timeout) if not done yet (unbounded when
  /// stop_timeout is zero); prints one line to stderr if it had to abandon anything. May
  /// run on any thread, but must not race host calls.
  ~pool();

  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  /// Queues `fn(std::move(arg))` on a worker. `handler(knit::result<R>)` is called exactly
  /// once, on the host thread, from drain(): with the value, or with errc::task_failed and
  /// the exception if fn threw, or errc::timed_out / errc::cancelled / errc::stuck.
  /// fn, arg and handler are moved into the call record (no copies of a request body).
  ///
  /// Returns errc::queue_full (max_pending reached) or errc::shut_down without calling the
  /// handler and without moving from fn, arg or handler: the rejection is decided before
  /// they are touched, so the caller still owns them (async_run relies on this to complete
  /// the rejected operation through its own handler). Otherwise returns an empty
  /// error_code, and `*id` (if given) names the call for cancel(). Host thread only.
  /// @throws std::logic_error off the host thread; std::bad_alloc (see "Exception safety").
  template <class Fn, class Arg, class Handler>
  [[nodiscard]] std::error_code submit(Fn&& fn, Arg&& arg, Handler&& handler,
                                       call_options options = {}, call_id* id = nullptr) {
    using call_type = detail::call<std::decay_t<Fn>, std::decay_t<Arg>, std::decay_t<Handler>>;
    static_assert(std::is_invocable_v<std::decay_t<Fn>&, std::decay_t<Arg>&&>,
                  "knit::pool::submit: fn must be callable with the argument moved in");
    static_assert(alignof(call_type) <= 64, "knit::pool::submit: over-aligned task or argument");
    detail::host_state* host = nullptr;  // the calling thread's host (admit finds it)
    if (std::error_code ec = admit(host)) return ec;
    std::uint32_t block = 0;
    void* memory = allocate_call(host, sizeof(call_type), alignof(call_type), block);
    call_type* c;
    try {
      c = ::new (memory)
          call_type(std::forward<Fn>(fn), std::forward<Arg>(arg), std::forward<Handler>(handler));
    } catch (...) {
      free_call_memory(host, memory, block);
      throw;
    }
    c->block_size = block;
    call_id assigned;
    try {
      // Strong guarantee: on a throw nothing is counted or queued. A process call's record
      // goes to the host's ring of worker processes (knit/process.hpp), never to a thread.
      if constexpr (std::is_same_v<std::decay_t<Fn>, detail::process_call_fn>) {
        assigned = enqueue_process(host, c, options, c->function().job);
      } else {
        assigned = enqueue(host, c, options);
      }
    } catch (...) {
      c->destroy();
      free_call_memory(host, memory, block);
      throw;
    }
    if (id) *id = assigned;
    return {};
  }

  /// Abandons a call that has not started running: its handler gets errc::cancelled before
  /// cancel() returns. Returns false if the call already ran, is running, or is unknown.
  /// Host thread only.
  bool cancel(call_id id);

  /// An eventfd that becomes readable when results are waiting. Watch it in the host's
  /// event loop and call drain() when it fires (knit/asio.hpp does this for Asio).
  int completion_fd() const noexcept;

  /// Delivers every waiting result, expired deadline and stuck call, then moves backlogged
  /// calls into free ring slots. Returns the number of handlers called. Host thread only;
  /// called from inside a handler it returns 0 (the outer drain finishes the round).
  std::size_t drain();

  /// drain() without touching the completion eventfd: for a host that busy-polls instead of
  /// waiting on completion_fd() (benchmarks, spin-then-block loops). Host thread only.
  std::size_t poll();

  /// Accepted calls whose handler has not been called yet.
  std::size_t pending() const noexcept;

  /// The host's running estimate of how long one call runs on a worker (an EWMA with weight
  /// 1/8 over the calls that came back; zero until the first one). Dispatch compares it
  /// with pool_options::wake_cost_us; admission control can use it to turn pending() into
  /// an expected queueing delay.
  std::chrono::nanoseconds call_time_estimate() const noexcept;

  /// The earliest deadline among pending calls, or the moment a running call would become
  /// stuck if sooner; empty if none. The host loop arms a timer on it and calls drain()
  /// when it passes.
  std::optional<std::chrono::steady_clock::time_point> next_deadline() const;

  /// Stops the pool: see "Shutdown steps" above. Idempotent. Host thread only; not from
  /// inside a handler. Without a deadline it waits for every call that is not stuck (stuck
  /// ones are retired at stuck_after as usual; with stuck_after zero, a task that never
  /// returns blocks it).
  void shutdown(shutdown_mode mode = shutdown_mode::drain);
  /// The same, but returns by `deadline` (plus the time to join workers that are idle or
  /// skipping abandoned calls): see step 3. Returns what it gave up on; a second call
  /// returns an empty report.
  shutdown_report shutdown(shutdown_mode mode, std::chrono::steady_clock::time_point deadline);
  /// False once shutdown() has begun: submit() then returns errc::shut_down.
  bool accepting() const noexcept;

  /// A snapshot of every host's and every worker's counters. On any host's thread.
  pool_stats stats() const;
  /// The options the pool was built with.
  const pool_options& options() const noexcept;
  /// One line for a log: options().describe().
  std::string describe() const;

  /// Whether the calling thread is one of this pool's hosts (its builder, or a thread
  /// attached with knit::pool_host or knit::asio_host).
  bool is_host() const noexcept;

 private:
  friend class pool_host;
  std::error_code admit(detail::host_state*& host);
  void* allocate_call(detail::host_state* host, std::size_t size, std::size_t align,
                      std::uint32_t& block);
  void free_call_memory(detail::host_state* host, void* memory, std::uint32_t block) noexcept;
  call_id enqueue(detail::host_state* host, detail::call_base* c, const call_options& options);
  call_id enqueue_process(detail::host_state* host, detail::call_base* c,
                          const call_options& options,
                          const std::shared_ptr<detail::process_job>& job);

  std::unique_ptr<detail::pool_impl> impl_;
};

}  // namespace knit
