// knit::pool: host threads hand calls to N worker threads and get results back on their own
// thread. Public face and owner of the workers, rings, doorbells and backlog. Its hosts,
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

/// How a host's event loop watches its completion_fd(), told to drain(): it decides whether
/// the drain must read the eventfd to reset it.
enum class completion_watch {
  /// The watch reports the descriptor while it is readable (poll(2), level-triggered epoll,
  /// a one-shot poll re-armed after each wake): the drain reads the eventfd, or the watch
  /// would fire again at once.
  readiness,
  /// The watch reports every write to it, whatever the counter holds (an io_uring
  /// multishot poll): the drain leaves the eventfd unread, one system call fewer per wake.
  /// From the first result on the descriptor then stays readable, so no readiness watch
  /// may share it (it would fire without end).
  each_write,
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
class process_workers;

/// @brief Host threads hand calls to N worker threads and get results back on their own
/// thread.
///
/// **Hosts.** A host is a thread that submits calls and gets their handlers back on itself:
/// its own calls, completion eventfd, deadlines, admission and handlers (run only on it,
/// inside drain(), poll(), cancel() or its part of shutdown). Every host is the same kind
/// (docs/many-hosts.md). A thread becomes one with knit::pool_host or knit::asio_host
/// (knit/pool_host.hpp: attaching, leaving); the thread that built the pool also becomes
/// one by itself at its first submit() (or completion_fd()) while it is no host: the pool
/// holds that attachment until it is shut down, unless a pool_host or asio_host made later
/// on that thread takes it over. A builder that never submits takes no host index.
///
/// **Threading contract.** submit, cancel, drain, poll, pending, next_deadline,
/// call_time_estimate, accepting and completion_fd act on the calling thread's host. On a
/// thread that is no host, submit, cancel, drain and poll throw std::logic_error (checked,
/// not assumed), except on the building thread, where submit attaches it as above and the
/// others have nothing to do (0, false); the queries answer for a host with no call:
/// pending() 0, next_deadline() empty, call_time_estimate() zero, completion_fd() -1 (the
/// building thread attaches instead), accepting() whether the pool still accepts. Never
/// another host's figures. stats(), options(), describe(), is_host() and shutdown() may be
/// called on any thread.
///
/// **Shutdown, from any thread.** Whoever owns the pool may shut it down from any thread,
/// a host or not, and several threads may call shutdown at once: the first call runs it,
/// every call returns once the workers are stopped, and only the first returns a report
/// (the others an empty one; destroy the pool only after every call has returned). The
/// steps (src/pool.cpp):
/// 1. stop accepting: from now on submit() on every host returns errc::shut_down without
///    calling the handler, accepting() is false, every host's completion fd turns readable
///    (a loop asleep on it learns of it), and a thread that attaches gets std::logic_error;
/// 2. and 3. every host finishes its own calls on its own thread (a handler never runs on
///    another thread), and the shutdown waits for each: the calling thread's own host, if
///    it is one, inside this call (cancel mode: its calls not yet running get
///    errc::cancelled; then it drains until every call is delivered and every record is
///    back from the workers, a record never being freed while a worker may hold it); any
///    other host when it leaves (its pool_host or asio_host destroyed: knit/pool_host.hpp)
///    or when its thread calls shutdown too (as for the caller). The building thread's own
///    attachment takes part when that thread calls shutdown; the destructor, which must not
///    race that thread's calls, finishes it itself if it has not (its handlers then run on
///    the destructor's thread). With a deadline, a host still busy once it passes gives up
///    on its own thread: calls not started get errc::cancelled, running ones are given up
///    (errc::cancelled, result discarded) through worker retirement; the report counts every
///    host's. A host that has not taken part 5 s past the deadline is a bug in the program
///    (its thread neither leaves nor shuts down): the pool says so on stderr and aborts.
///    Without a deadline the wait has no bound;
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
  /// Starts options.threads workers. The calling thread becomes a host at its first
  /// submit() (see "Hosts"), not before.
  /// @throws config_error for invalid options (pool_options::validate()).
  explicit pool(pool_options options = {});
  /// shutdown(drain, now + options.stop_timeout) if not done yet (unbounded when
  /// stop_timeout is zero); prints one line to stderr if it had to abandon anything. May
  /// run on any thread, but must not race the building thread's calls (it finishes that
  /// thread's attachment itself, see "Shutdown"); attached hosts still there are waited for
  /// as by shutdown().
  ~pool();

  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;

  /// Queues `fn(std::move(arg))` on a worker. `handler(knit::result<R>)` is called exactly
  /// once, on the calling thread (its host), from drain(): with the value, or with
  /// errc::task_failed and the exception if fn threw, or errc::timed_out / errc::cancelled /
  /// errc::stuck. fn, arg and handler are moved into the call record (no copies of a request body).
  ///
  /// Returns errc::queue_full (max_pending reached) or errc::shut_down without calling the
  /// handler and without moving from fn, arg or handler: the rejection is decided before
  /// they are touched, so the caller still owns them (async_run relies on this to complete
  /// the rejected operation through its own handler). Otherwise returns an empty
  /// error_code, and `*id` (if given) names the call for cancel(). On a host's thread (the
  /// building thread attaches here if it is no host; once the shutdown has begun it gets
  /// errc::shut_down instead).
  /// @throws std::logic_error on a thread that is no host, or when the building thread
  /// cannot attach (max_hosts hosts attached); std::bad_alloc (see "Exception safety").
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
  /// On the thread of the host that submitted it.
  bool cancel(call_id id);

  /// The calling thread's host's eventfd, readable when its results are waiting (always,
  /// from the first result on, under drain(completion_watch::each_write)). Watch it in the
  /// host's event loop and call drain() when it fires (knit/asio.hpp does this for Asio). -1 on a
  /// thread that is no host (the building thread attaches instead).
  int completion_fd() const noexcept;

  /// Delivers every waiting result, expired deadline and stuck call, then moves backlogged
  /// calls into free ring slots, for the calling thread's host. Returns the number of
  /// handlers called. Called from inside a handler it returns 0 (the outer drain finishes
  /// the round). `watch`: how the loop watches completion_fd() (completion_watch): the
  /// default reads the eventfd, which every kind of watch allows.
  std::size_t drain(completion_watch watch = completion_watch::readiness);

  /// drain() without touching the completion eventfd: for a host that busy-polls instead of
  /// waiting on completion_fd() (benchmarks, spin-then-block loops).
  std::size_t poll();

  /// Held checks (pool_options::wake_at_turn_end), for the calling thread's host: with
  /// `on`, submit() leaves the fence and the check that a worker is awake, which it would
  /// pay after each call, to the host's next flush_wakes(), drain() or poll(), or to
  /// hold_wakes(false): one per worker per turn instead of one per call. A worker that
  /// parked since this host last pushed to it is still woken inside submit() when it has
  /// a CPU beside the host's; when it shares the host's CPU its wake waits for the flush
  /// too (a worker woken mid-turn there can only preempt the loop). Returns whether checks are held
  /// now: false when the option is off. On the pool's building thread it attaches that thread as a
  /// host, as its first submit would. A host that holds them must flush before it sleeps:
  /// an owed check can leave its calls queued behind a parked worker. knit::asio_host
  /// does it all.
  bool hold_wakes(bool on);

  /// Does every check (and wake) the calling thread's host owes (see hold_wakes). Cheap
  /// when none is owed: an event loop calls it once at the end of each turn.
  void flush_wakes();

  /// The calling thread's host's accepted calls whose handler has not been called yet.
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

  /// Stops the pool: see "Shutdown, from any thread" above. Idempotent. Any thread; not
  /// from inside a handler (std::logic_error). Without a deadline it waits for every call
  /// that is not stuck (stuck ones are retired at stuck_after as usual; with stuck_after
  /// zero, a task that never returns blocks it) and for every host to take part.
  void shutdown(shutdown_mode mode = shutdown_mode::drain);
  /// The same, but returns by `deadline` (plus the time to join workers that are idle or
  /// skipping abandoned calls): see step 3. Returns what it gave up on; a second call
  /// returns an empty report.
  shutdown_report shutdown(shutdown_mode mode, std::chrono::steady_clock::time_point deadline);
  /// False once shutdown() has begun (submit() then returns errc::shut_down) or, on a host,
  /// once it has left.
  bool accepting() const noexcept;

  /// A snapshot of every host's and every worker's counters: the totals over every host
  /// (those that left included) and, while two hosts or more are attached, each one's
  /// (pool_stats::hosts). On any thread, a host or not.
  pool_stats stats() const;
  /// The options the pool was built with.
  const pool_options& options() const noexcept;
  /// One line for a log: options().describe().
  std::string describe() const;

  /// Whether the calling thread is one of this pool's hosts now (the building thread once
  /// it has submitted, or a thread attached with knit::pool_host or knit::asio_host).
  bool is_host() const noexcept;

 private:
  friend class pool_host;
  friend class process_workers;  // its children take the pool's CPUs
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
