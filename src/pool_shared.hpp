// pool_shared: the state the hosts and the workers share: the seats (worker slots with their
// doorbells and counters), which hosts have work for each seat, the hosts themselves, the
// idle policy and the stop flags.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "idle_policy.hpp"
#include "knit/call.hpp"
#include "knit/detail/cache_line.hpp"
#include "knit/error.hpp"
#include "knit/options.hpp"
#include "knit/stats.hpp"
#include "worker_doorbell.hpp"
#include "worker_sched.hpp"
#include "worker_thread.hpp"

namespace knit::detail {

// A counter written by one thread only (its worker): a relaxed load + store, no locked
// instruction. Readers (pool::stats on any host) load it relaxed: a count, not a hand-off.
struct single_writer_counter {
  std::atomic<std::uint64_t> value{0};
  void bump() noexcept {
    value.store(value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

// One host's counters (in its host_state), written by that host's thread only; pool::stats
// reads them on any host thread.
struct host_counters {
  single_writer_counter calls_submitted, calls_completed, calls_rejected, calls_backlogged,
      calls_cancelled, calls_timed_out, calls_failed, calls_stuck, host_wakes, completion_batches;
  // Running calls the host ring declared stuck (their child killed, no worker seat retired),
  // bumped by the ring itself: host_stats::calls_stuck is both counts, and pool::stats adds
  // this one to the retirements it counts as the pool's calls_stuck.
  single_writer_counter ring_calls_stuck;
  // Children the host ring lent and retired (process_ring.hpp, "Lent children"): pool::stats
  // adds them to the pool's lent_workers_started and lent_workers_retired.
  single_writer_counter ring_lent_started, ring_lent_retired;

  host_stats snapshot(unsigned index) const noexcept {
    host_stats s;
    s.index = index;
    s.calls_submitted = calls_submitted.get();
    s.calls_completed = calls_completed.get();
    s.calls_rejected = calls_rejected.get();
    s.calls_backlogged = calls_backlogged.get();
    s.calls_cancelled = calls_cancelled.get();
    s.calls_timed_out = calls_timed_out.get();
    s.calls_failed = calls_failed.get();
    s.calls_stuck = calls_stuck.get() + ring_calls_stuck.get();
    s.host_wakes = host_wakes.get();
    s.completion_batches = completion_batches.get();
    return s;
  }
};

// One per worker slot, on its own cache line; the fields come from the one list of worker
// counters (knit/detail/worker_counters.hpp), like worker_stats' (knit/stats.hpp).
struct alignas(kCacheLine) worker_counters {
#define KNIT_WORKER_COUNTER_FIELD(name, description) single_writer_counter name;
  KNIT_WORKER_COUNTERS(KNIT_WORKER_COUNTER_FIELD)
#undef KNIT_WORKER_COUNTER_FIELD

  // pool::stats, on any host.
  worker_stats snapshot() const noexcept {
    worker_stats s;
#define KNIT_SNAPSHOT_COUNTER(name, description) s.name = name.get();
    KNIT_WORKER_COUNTERS(KNIT_SNAPSHOT_COUNTER)
#undef KNIT_SNAPSHOT_COUNTER
    return s;
  }

  // A replacement worker continues its predecessor's counts (before it starts).
  void carry_over(const worker_counters& old) noexcept {
#define KNIT_CARRY_COUNTER(name, description) \
  name.value.store(old.name.get(), std::memory_order_relaxed);
    KNIT_WORKER_COUNTERS(KNIT_CARRY_COUNTER)
#undef KNIT_CARRY_COUNTER
  }
};

// One worker thread's state. A seat (pool_shared::seats) points at its current slot; a
// retired slot is replaced by a fresh one and kept alive while anyone may touch it
// (worker_seats.cpp, "Retiring a worker"). The calls queued for a seat are in the hosts'
// rings into it (host_state.hpp), not in the slot, so a fresh slot takes them as they are.
struct worker_slot {
  // `hosts`: the pool's max_hosts, one `current_of` entry per host index.
  explicit worker_slot(unsigned hosts) : current_of(new std::atomic<call_base*>[hosts]) {
    for (unsigned h = 0; h < hosts; ++h) current_of[h].store(nullptr, std::memory_order_relaxed);
  }
  worker_doorbell bell;
  worker_counters counters;
  // steady_clock ns when the worker started its current call; 0 when it is between calls.
  // Writer: the worker only (relaxed: a hint for dispatch, like the state word). Partner:
  // the hosts' relaxed loads in dispatch (a hint) and, for stuck detection, after an
  // acquire load of `current_of` (stuck_scan.hpp).
  alignas(kCacheLine) std::atomic<std::int64_t> call_started_ns{0};
  // current_of[h]: the record of host h that the worker is running, or null. The worker
  // stores it (release) after call_started_ns and clears it before handing the record back
  // (the release of host h's done ring or list publishes the clear), so a record host h reads
  // here has not come back yet and is alive. One entry per host, so that a host only ever
  // dereferences its own records: another host may free its record the moment it is back.
  // Writers: the worker per call, and host h once when it declared that call stuck (it
  // clears the entry; the worker never writes it again: it leaves). Partner: host h's
  // acquire loads in stuck_scan.hpp.
  std::unique_ptr<std::atomic<call_base*>[]> current_of;
  // Set to true by the retired worker when its stuck task returned, and by the pool when
  // it gives the record up (shutdown): whoever sets it second destroys the stuck record.
  // The exchange is acq_rel so the second sees every write of the first. Writers: both, by
  // exchange; partners: each other's exchange, and the acquire load in collect_handoffs
  // (worker_seats.cpp).
  std::atomic<bool> handoff{false};
  // The worker's attempt at worker_nice / worker_sched (worker_sched.hpp): it writes
  // sched_error first, then sets sched_applied (release) and notifies. Partner: the
  // constructor's acquire wait in worker_seats.cpp (await_sched), which throws on an error.
  // Writer of both: the worker, once, before its loop.
  worker_sched_error sched_error;
  std::atomic<bool> sched_applied{false};
  worker_thread thread;

  // A lent slot's phase (lent_workers.cpp): idle (no thread, or its thread has ended),
  // working (claiming or running calls), leaving (found nothing; re-checking before it
  // ends). Writers: the pool under its seats mutex (idle -> working, as it starts the
  // thread) and the lent worker (working -> leaving -> working or idle). Partners: the
  // hosts' loads after their fence (lent_workers.cpp), the pool's acquire load.
  enum class lent_phase : int { idle, working, leaving };
  std::atomic<lent_phase> phase{lent_phase::idle};

  // Under pool_impl's seats mutex (any host retires a seat): whether this slot's worker
  // was retired, the record its thread still runs, and the pool's list of retired slots.
  bool retired = false;
  call_base* stuck_record = nullptr;
  std::shared_ptr<worker_slot> next_retired;
};

// Per seat: bit h set = host h may have calls queued in its ring into this seat.
// Writers: the hosts (fetch_or after a push, when their bit was clear) and the seat's
// worker (fetch_and when it finds that ring empty, then a re-check). Partners: each
// other, through the fences of the protocol in host_state.hpp.
struct alignas(kCacheLine) seat_hosts {
  std::atomic<std::uint64_t> hosts{0};
};

class host_state;

// One host's pending count, published for the pool-wide bound (max_pending_total). Writer:
// that host only (relaxed store after each change); partner: every host's relaxed loads
// in pending_total() at admission (a count, not a hand-off).
struct alignas(kCacheLine) host_pending {
  std::atomic<std::size_t> calls{0};
};

inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct pool_shared {
  // own_cpu: spin_gate.hpp's answer, read on the host thread before any worker starts.
  pool_shared(const pool_options& o, bool own_cpu)
      : options(o),
        policy(o.effective_spin_us(), o.max_spinners, o.effective_spin_gate(), own_cpu) {}

  const pool_options options;
  idle_policy policy;
  // The CPUs of a worker with none of its own (worker_thread.hpp): the building thread's
  // mask, taken here, on that thread. Read-only after.
  const cpu_set_t unpinned_cpus = building_thread_cpus();
  // options.wake_at_turn_end and no CPU for each worker beside the host (spin_gate.hpp):
  // a host that asks may hold its wakes to the end of its loop turn. Set once by the
  // pool's constructor, before any host or worker exists; read-only after.
  bool wakes_may_wait_for_turn_end = false;
  // seats[i] is worker i's current slot. The host that retires a worker replaces it (release
  // store under the seats mutex, worker_seats.cpp); workers read their peers' through it
  // (acquire) to steal, hosts to ring a bell. A slot that left its seat stays alive until
  // shutdown, so a thief holding a stale pointer is safe. Partner: seat()'s acquire load.
  std::unique_ptr<std::atomic<worker_slot*>[]> seats;
  unsigned seat_count = 0;
  worker_slot& seat(unsigned i) const noexcept { return *seats[i].load(std::memory_order_acquire); }
  // A ringer with work already published (a worker's queued calls, a host's held ones):
  // wakes the first parked worker among the `count` seats from `first` on (wrapping), after
  // the fence that pairs with their park fence (worker_doorbell.hpp). Returns whether it
  // issued a FUTEX_WAKE (the caller counts it).
  bool wake_one_parked(unsigned first, unsigned count) const noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (unsigned k = 0; k < count; ++k) {
      if (seat((first + k) % seat_count).bell.wake_if_parked()) return true;
    }
    return false;
  }
  // Lent workers (lent_workers.cpp): lent[k] is lent slot k, seat index seat_count + k in
  // the stuck scan. Each entry always names a slot that lives as long as the pool (one
  // retired for a stuck call is replaced, like a seat's). Writer: the pool under its seats
  // mutex (release); partner: any_slot()'s acquire load.
  std::unique_ptr<std::atomic<worker_slot*>[]> lent;
  unsigned lent_limit = 0;         // options.effective_lent_limit()
  std::int64_t lend_after_ns = 0;  // options.lend_after
  // Lent workers that ended idle. Writer: each lent worker (fetch_add, before its phase
  // turns idle); partner: stats()'s relaxed load (a count).
  std::atomic<std::uint64_t> lent_retired_idle{0};
  unsigned slot_count() const noexcept { return seat_count + lent_limit; }
  // Seat i's current slot, or lent slot i - seat_count.
  worker_slot& any_slot(unsigned i) const noexcept {
    return i < seat_count ? seat(i) : *lent[i - seat_count].load(std::memory_order_acquire);
  }
  // The hosts (host_state.hpp): seat_pending[w] names those with work for seat w; hosts[h]
  // is host h's state, published (release) when index h is first used and kept until the
  // pool is destroyed. Writer of hosts: the pool, under its hosts mutex; partner: the
  // workers' acquire load in host().
  std::unique_ptr<seat_hosts[]> seat_pending;
  std::unique_ptr<std::atomic<host_state*>[]> hosts;
  host_state* host(unsigned h) const noexcept { return hosts[h].load(std::memory_order_acquire); }
  // Set (release) by a retired worker whose stuck task returned first (worker.cpp,
  // hand_over_stuck), and by a host whose replacement worker could not start: the next
  // host to drain takes the seats mutex and tends the seats (worker_seats.cpp,
  // tend_seats). Partner: that host's acquire exchange.
  alignas(kCacheLine) std::atomic<bool> seats_need_care{false};
  // Set by the pool's shutdown (release): every host's submit then returns errc::shut_down.
  // Partner: host_state::accepting()'s acquire load, and a leaving host's in settle.
  std::atomic<bool> closed{false};
  // The shutdown's deadline (steady_clock ns since its epoch; 0: none). Writer: the
  // shutdown, once, before its release store of `closed`; partner: each host's relaxed
  // load after its acquire load of `closed` (host_state::pool_deadline): past it, a host
  // doing its part of the shutdown gives up what it has left, on its own thread.
  std::atomic<std::int64_t> stop_deadline_ns{0};
  // host_pending[h] for every index h < max_hosts (host h's is [h]); touched only
  // when options.max_pending_total is set.
  std::unique_ptr<host_pending[]> pending_by_host;
  std::size_t pending_total() const noexcept {
    std::size_t n = 0;
    for (unsigned h = 0; h < options.max_hosts; ++h) {
      n += pending_by_host[h].calls.load(std::memory_order_relaxed);
    }
    return n;
  }
  // The pool-wide bound: false when a host may not admit one more call.
  bool total_allows_one_more() const noexcept {
    return options.max_pending_total == 0 || pending_total() < options.max_pending_total;
  }
  // Admission, the same for every host: why a host that is `accepting` (or not) with
  // `pending` calls of its own may not take one more (shut_down, queue_full), or nothing.
  std::error_code admission_refusal(bool accepting, std::size_t pending) const noexcept {
    if (!accepting) return make_error_code(errc::shut_down);
    if ((options.max_pending != 0 && pending >= options.max_pending) || !total_allows_one_more()) {
      return make_error_code(errc::queue_full);
    }
    return {};
  }
  void publish_pending(unsigned h, std::size_t pending) noexcept {
    if (options.max_pending_total != 0) {
      pending_by_host[h].calls.store(pending, std::memory_order_relaxed);
    }
  }
  // Set by the pool's shutdown once every host's records have come back (step 4,
  // stop_workers in worker_seats.cpp: release, then a seq_cst fence). Partner: the workers' acquire
  // loads after their park fence (worker.cpp), so a stop is never missed.
  alignas(kCacheLine) std::atomic<bool> stopping{false};
};

// The worker thread's body (worker.cpp). `me` keeps the slot alive while the thread runs:
// a retired, detached thread may outlive the pool, and then touches only its slot and its
// stuck record.
void worker_main(pool_shared& shared, std::shared_ptr<worker_slot> me, unsigned self) noexcept;

// Starts worker `self`'s thread (a seat's, or a lent one's: self >= seat_count) running
// worker_main on its CPUs (worker_thread.hpp). Throws std::system_error as std::thread does.
worker_thread start_worker(pool_shared& shared, std::shared_ptr<worker_slot> me, unsigned self);

}  // namespace knit::detail
