// pool_options: pool shape and worker idle policy; from_env() reads the KNIT_* variables.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "knit/error.hpp"
#include "knit/export.hpp"
#include "knit/process_options.hpp"

namespace knit {

/// @brief The Linux scheduling class a worker thread puts itself in (pool_options::worker_sched).
enum class sched_class {
  other,  ///< SCHED_OTHER: not changed (inherited from the host, normally SCHED_OTHER).
  batch,  ///< SCHED_BATCH: like SCHED_OTHER, but never preempts on wake-up (CPU-bound work).
  idle,   ///< SCHED_IDLE: runs only when nothing else wants the CPU (may starve under load).
};

/// @brief Pool shape and worker idle policy, given to pool's constructor.
///
/// Every field has a usable default; from_env() reads them from the KNIT_* environment
/// variables and validate() checks their ranges (the pool's constructor calls it).
struct KNIT_API pool_options {
  /// Worker threads, 1 to 1024. The host (the thread that owns the pool) is not counted.
  unsigned threads = 1;

  /// Spin budget of an idle worker before it parks, in µs (at most 1000000). Unset: 50 µs
  /// with one worker (it is the critical path), 0 with two or more (a peer is already
  /// awake); effective_spin_us() resolves it. The policies are in src/idle_policy.hpp.
  std::optional<unsigned> spin_us;

  /// Park timeout in ms (at most 3600000). 0 = park until woken (no timed wake-ups at all
  /// when idle). A positive value also wakes parked workers every park_ms, so a worker
  /// finds work even without a doorbell.
  unsigned park_ms = 0;

  /// Host -> worker doorbell. Off = nobody wakes a parked worker: it finds work only at its
  /// park timeout (KNIT_DOORBELL=0). Requires park_ms > 0.
  bool doorbell = true;

  /// An awake worker with an empty ring takes queued calls from a peer's ring.
  bool steal = true;

  /// Whether an idle worker's spin is gated (src/spin_gate.hpp, src/spin_backoff.hpp): it
  /// spins only if the host and every worker can each have a CPU (counted from the host's
  /// affinity mask and worker_cpus when the pool is built), and it skips spinning for a
  /// while (1, 2, 4, ... up to 64 idle periods) after a run of spins that caught nothing.
  /// Its budget also stretches to the last gap between calls plus a quarter, up to twice
  /// the base (100 µs by default), so a stream whose calls come a little further apart than
  /// the base keeps its spinner (src/spin_budget.hpp); a stream that stops costs one such
  /// spin at most. Unset: on for the default budget (spin_us unset), off for an explicit spin_us,
  /// which then spins its budget unconditionally as before. KNIT_SPIN_GATE=auto|off.
  std::optional<bool> spin_gate;

  /// Most workers allowed to spin at once; 0 = no cap. With a cap of 1 and a spin budget,
  /// a spinner that catches work hands the spinning role to a parked peer (Go's wakep), so
  /// the host rarely pays for a wake-up (src/idle_policy.hpp).
  unsigned max_spinners = 0;

  /// What waking a parked worker is assumed to cost, in µs: waking a parked worker costs it
  /// 12–47 µs until it runs and the waker 10–16 µs of CPU on the 2-vCPU VMs this was built
  /// on. The host queues a call behind a busy worker instead of waking a parked one only
  /// when that worker is expected to be free sooner than this (by pool::call_time_estimate()).
  /// 0 = never queue behind a busy worker.
  unsigned wake_cost_us = 50;

  /// Slots per worker ring, 1 to 16777216 (rounded up to a power of two). Calls beyond it
  /// wait in the host-side backlog, never dropped.
  std::size_t queue_capacity = 1024;

  /// Most calls accepted but not yet completed (backlog + rings + running); 0 = no limit.
  /// At the limit pool::submit() fails at once with errc::queue_full.
  std::size_t max_pending = 0;

  /// Most hosts at once, 1 to 64, counting the thread that built the pool (host 0); other
  /// threads attach with knit::pool_host or knit::asio_host. Each is held to max_pending
  /// on its own. An attached host's rings (threads x queue_capacity slots of 16 bytes) are
  /// allocated when its index is first used, and kept until the pool is destroyed.
  unsigned max_hosts = 16;

  /// Most calls accepted but not yet completed in the whole pool, summed over every host;
  /// 0 = no limit. At the limit submit() fails at once with errc::queue_full on any host.
  /// The sum is of the hosts' own counts, read relaxed at admission (no RMW shared by the
  /// hosts), so hosts admitting at the same moment may pass it by a call each.
  std::size_t max_pending_total = 0;

  /// A call running longer than this is declared stuck: its handler gets errc::stuck (or
  /// errc::timed_out if its own deadline passed) at once, its worker is retired and a fresh
  /// thread takes the worker's place (src/worker_seats.cpp, "Retiring a worker"). Zero =
  /// never; at most 24 h. A call may set its own (call_options::stuck_after). from_env()
  /// defaults it to 30 s.
  std::chrono::milliseconds stuck_after{0};

  /// Lending a worker (src/lent_workers.cpp): when every worker has run its current call
  /// for at least lend_after and calls wait in the rings, the pool starts a temporary extra
  /// worker that takes the waiting calls and exits once it finds none; the held calls run
  /// on and deliver their results. Process calls (knit/process.hpp) the same way, per host:
  /// when every worker process of a host holds a call past lend_after and calls wait, the
  /// host starts one more (sandboxed like the others), retired once idle for lend_after.
  /// Zero = never lend; at most 24 h. from_env(): KNIT_LEND_AFTER_MS (unset: 0).
  std::chrono::milliseconds lend_after{0};

  /// Most lent workers alive at once (worker threads for the pool; worker processes per
  /// host); unset = threads, 0 = never lend. At the limit the waiting calls wait (their
  /// deadlines, if any, decide). KNIT_LEND_WORKERS.
  std::optional<unsigned> max_lent_workers;

  /// How many workers the pool may lend: 0 when lending is off.
  unsigned effective_lent_limit() const noexcept {
    if (lend_after.count() <= 0) return 0;
    return max_lent_workers ? *max_lent_workers : threads;
  }

  /// The deadline the destructor gives shutdown(drain, now + stop_timeout) when shutdown()
  /// was not called: calls not started by then are cancelled, running ones abandoned and
  /// their threads detached. Zero = wait for every call (unbounded); at most 24 h.
  std::chrono::milliseconds stop_timeout{10'000};

  /// Held checks for an event loop (pool::hold_wakes; knit::asio_host asks for them): a
  /// host that holds them pays the fence and the check that a worker is awake once per
  /// worker at the end of its loop turn (pool::flush_wakes; asio_host posts one per turn)
  /// or at its next drain, instead of once per call. With fewer CPUs than the host and the
  /// workers (the spin gate's count, src/spin_gate.hpp, taken when the pool is built) the
  /// wakes wait too: a worker woken mid-turn on the host's own CPU can only preempt the
  /// loop; woken at the turn's end it takes every call of the turn at once: one FUTEX_WAKE
  /// and one park per turn instead of one per call. With a CPU for every worker, a parked
  /// worker is still woken inside submit(). Off (default): submit() checks at once.
  bool wake_at_turn_end = false;

  /// Optional CPU affinity: worker i is pinned to worker_cpus[i % size] (lent workers count
  /// on after the seats). Empty = no pinning: every worker, lent workers and replacements
  /// included, may use the CPUs of the thread that built the pool, whichever thread starts
  /// it. Either way a worker thread starts on its CPUs; it never first runs on its starter's.
  /// Worker processes (isolation = process) are not pinned: each gets the CPUs of the
  /// thread that built its pool.
  std::vector<int> worker_cpus;

  /// Nice value each worker thread gives itself when it starts, 0 to 19 (Linux nice is per
  /// thread); 0 = not changed (inherited from the host). A higher value yields the CPU to
  /// the host when both want it. KNIT_WORKER_NICE.
  int worker_nice = 0;

  /// Scheduling class each worker thread puts itself in when it starts (sched_class).
  /// KNIT_WORKER_SCHED=other|batch|idle.
  sched_class worker_sched = sched_class::other;

  /// Share of a CPU, in percent, that heavy work keeps when a worker and an event loop share
  /// the CPU and both want all of it; 0 (or 100) = off, nothing changed. Each worker (thread,
  /// or worker process from its parent) raises its nice by the step whose kernel weight w
  /// gives w / (w + 1024) nearest this share (src/heavy_share.hpp: 25 -> +5, 10 -> +10;
  /// 50 and above -> +0, as only a negative nice could give more), on top of the nice it
  /// inherits. The loop below the share preempts the worker at once only if it also asks for
  /// a short slice (knit/loop_slice.hpp; knit-server does). An explicit worker_nice wins over
  /// it. It guarantees nothing against other processes on the CPU, and a loop that is not
  /// saturated gets all it asks for either way. KNIT_HEAVY_SHARE (0-100).
  unsigned heavy_share = 0;

  /// The pool's worker processes (knit/process.hpp): as many children as `threads`, called
  /// by each host through shared memory. Used only by process calls (submit_process).
  process_options process;

  // Either setting is applied by each worker, replacements included. The pool's
  // constructor waits for its workers to apply them and throws std::system_error naming the
  // setting if one could not (e.g. EPERM: a nice below the host's needs CAP_SYS_NICE); a
  // replacement worker that fails says so on stderr and in worker_stats::sched_failures.

  /// The spin budget this configuration actually uses, in µs (resolves an unset spin_us).
  unsigned effective_spin_us() const noexcept {
    return spin_us ? *spin_us : (threads == 1 ? 50u : 0u);
  }

  /// Whether the spin gate applies (resolves an unset spin_gate).
  bool effective_spin_gate() const noexcept {
    return spin_gate ? *spin_gate : !spin_us.has_value();
  }

  /// The nice step heavy_share gives each worker on top of the nice it inherits (0: off, or
  /// a share only a negative nice could give).
  int heavy_share_nice() const noexcept;

  /// Checks every setting's range, and that doorbell off comes with park_ms > 0.
  /// @throws config_error naming the bad setting and its value.
  void validate() const;

  /// Options from the environment: KNIT_THREADS, KNIT_SPIN, KNIT_PARK, KNIT_DOORBELL,
  /// KNIT_STEAL, KNIT_MAX_SPINNERS, KNIT_WAKE_COST (µs), KNIT_QUEUE_CAPACITY,
  /// KNIT_MAX_PENDING, KNIT_WORKER_CPUS ("0,2,4-7"), KNIT_STUCK_MS (unset: 30000; 0 = never),
  /// KNIT_STOP_TIMEOUT_MS (unset: 10000; 0 = no bound), KNIT_SPIN_GATE (auto|off),
  /// KNIT_WORKER_NICE (0-19), KNIT_WORKER_SCHED (other|batch|idle) and KNIT_HEAVY_SHARE
  /// (0-100). Unset or empty =
  /// default.
  /// @throws config_error on any malformed or out-of-range value (validate() included).
  static pool_options from_env();

  /// One line for a log, e.g.
  /// "threads=4 spin_us=0(default policy) park_ms=0(until woken) doorbell=on steal=on ...".
  std::string describe() const;
};

/// Parses a CPU list such as "0,2,4-7" into {0,2,4,5,6,7}.
/// @throws config_error mentioning `what` (the setting's name) on bad input.
KNIT_API std::vector<int> parse_cpu_list(const std::string& text, const char* what);

}  // namespace knit
