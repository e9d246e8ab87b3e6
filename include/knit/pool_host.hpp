// knit/pool_host.hpp: makes the calling thread a host of a knit::pool, for an event loop of
// its own (each host has its own completion eventfd, call table, backlog, deadlines and
// admission; the workers are shared). knit::asio_host does this for you; use pool_host
// directly for a non-Asio loop.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <system_error>
#include <utility>

#include "knit/export.hpp"
#include "knit/pool.hpp"

namespace knit {

/// @brief The calling thread as an attached host of a pool.
///
/// **Attaching.** Any thread, the one that built the pool included: if that thread already
/// has the attachment its first submit made (knit/pool.hpp, "Hosts"), this pool_host takes
/// it over (the same host, index and calls) and it leaves when the pool_host goes.
///
/// **Threading contract.** Construct and destroy it on the thread that uses it; every
/// member is for that thread. While it exists, pool::submit, cancel, drain, poll, pending,
/// next_deadline, accepting and completion_fd called on this thread act on this host's
/// calls, and handlers run only on this thread, inside drain() or poll(). The pool must
/// outlive it.
///
/// **Leaving.** The destructor stops accepting, cancels every call of this host not yet
/// started (errc::cancelled, delivered here), and drains until every running one is back
/// or declared stuck (their results are delivered here too); only then is the index free
/// for another
/// thread. Nothing is ever delivered to a thread after its host has left.
///
/// **The pool's shutdown** (from any thread, or the destructor) stops every host accepting
/// (submit returns errc::shut_down here, accepting() turns false, completion_fd() turns
/// readable), and waits for this host to take part on this thread before it stops the
/// workers: by leaving (destroying this pool_host: what has not started is cancelled, the
/// rest drained), or by calling pool::shutdown here, which finishes this host's calls in
/// that call's mode and returns once the pool has stopped (then this host stays attached,
/// with nothing left, until it leaves). Its deadline (shutdown(mode, deadline), or
/// stop_timeout for the destructor) holds for every host: a host taking part past it gives
/// up what it still has, on its own thread (errc::cancelled delivered here; running calls'
/// workers retired, as give_up() does), and the shutdown's report counts those calls
/// (cancelled_at_deadline, abandoned_running; the calls a leave cancels before the
/// deadline, as every leave does, are not in it). Without a deadline the wait has no bound.
/// A host that has not taken part 5 s past the deadline, i.e. whose thread neither leaves
/// nor shuts down, is a bug in the program: the pool says so on stderr and aborts, since
/// its workers cannot be stopped under a host that may still use them.
///
/// **Leaving from inside a handler.** Destroying this host (or the knit::asio_host that
/// owns it) inside one of its own handlers is allowed: the destructor leaves as above
/// (the calls still out are delivered there, inside that handler), and returns; from then
/// on this thread is no host (pool::submit here throws std::logic_error). The index is
/// freed when the drain, poll, cancel or give_up that ran the handler returns, since it
/// still uses this host's state until then.
///
/// **Stuck calls** (pool_options::stuck_after, or call_options::stuck_after per call): this
/// host's drain() declares its own call stuck once it has run longer, delivers errc::stuck
/// (errc::timed_out if its deadline passed) here at once, and puts a fresh worker in that
/// seat itself, at once (unless the pool is shutting down), so the calls queued behind it
/// run whether or not any other host drains. The retired worker's slot and record are freed
/// (once the task returns) by the next drain() of any host, or at shutdown: until then they
/// are kept, one slot per stuck call. A host can leave while its stuck call still runs.
/// Deadlines (call_options::timeout), cancel and max_pending (per host) work as on any
/// host.
class KNIT_API pool_host {
 public:
  /// Attaches the calling thread (or takes over the building thread's own attachment, see
  /// "Attaching"). @throws std::logic_error if it is already a host of `p` through a
  /// pool_host, if `p` is shutting down, or if max_hosts hosts are attached.
  explicit pool_host(pool& p);
  /// Leaves (see "Leaving"). Must run on the attaching thread: elsewhere it aborts.
  ~pool_host();

  pool_host(const pool_host&) = delete;
  pool_host& operator=(const pool_host&) = delete;

  /// pool::submit on this host (see there): the handler runs on this thread.
  template <class Fn, class Arg, class Handler>
  [[nodiscard]] std::error_code submit(Fn&& fn, Arg&& arg, Handler&& handler,
                                       call_options options = {}, call_id* id = nullptr) {
    return pool_->submit(std::forward<Fn>(fn), std::forward<Arg>(arg),
                         std::forward<Handler>(handler), options, id);
  }

  /// Abandons a call of this host not started yet (as pool::cancel).
  bool cancel(call_id id);
  /// This host's eventfd: readable when its results are waiting.
  int completion_fd() const noexcept;
  /// Delivers this host's waiting results and expired deadlines, then its backlog (as
  /// pool::drain, `watch` included).
  std::size_t drain(completion_watch watch = completion_watch::readiness);
  /// drain() without touching the eventfd (busy-polling loops).
  std::size_t poll();
  /// For a stop deadline: cancels this host's calls not started and gives up its running
  /// ones, every handler getting errc::cancelled here and now; their workers are retired
  /// (and, while the pool accepts, replaced) as for a stuck call. Returns
  /// what it gave up (cancelled_at_deadline, abandoned_running). The host stays attached.
  shutdown_report give_up();
  /// This host's accepted calls whose handler has not run yet.
  std::size_t pending() const noexcept;
  /// The earliest deadline among this host's pending calls.
  std::optional<std::chrono::steady_clock::time_point> next_deadline() const;
  /// False once this host leaves or the pool shuts down.
  bool accepting() const noexcept;
  /// This host's counters.
  host_stats stats() const noexcept;
  /// This host's index, 0 to max_hosts - 1 (the first free one when it attached).
  unsigned index() const noexcept;
  /// The pool this host submits to.
  pool& get_pool() noexcept { return *pool_; }

 private:
  pool* pool_;
  detail::host_state* state_;
};

}  // namespace knit
