// host_state: one attached host's side of the pool (a thread other than the one that built
// it, which keeps the pool's own state in pool_impl): its submission rings into every
// worker seat, its completion list, eventfd, call table, backlog, deadlines, admission and
// counters. The workers' side of it is worker.cpp (claim_attached, complete).
//
// Protocol (many hosts, one pool; the argument is docs/many-hosts.md)
//   Rings. Host h pushes into ring(h, w), a job_ring (one producer: host h; consumers:
//   worker w, thieves, and host h itself while it leaves). Workers complete h's records
//   into h's completion list, a push-only stack (CAS by the workers, one exchange by host
//   h per drain), then notify h's own host_doorbell: one coalesced eventfd write per round,
//   and none while h is already signalled (host_doorbell.hpp).
//   Which hosts have work for seat w: the bits of seat_pending(w), a 64-bit mask.
//     host h, after a push into ring(h, w):      worker w, finding ring(h, w) empty:
//       fence(seq_cst)                              mask.fetch_and(~bit h)
//       if !(mask & bit h):                         fence(seq_cst)
//         mask.fetch_or(bit h)                      if ring(h, w) not empty:
//         fence(seq_cst)                              mask.fetch_or(bit h)
//       if bell(w) parked: wake it
//   Guarantee 1 (no stranded call): either the worker's re-check sees the push, or the
//   host's load sees the cleared bit and sets it again (Dekker on tail and mask).
//   Guarantee 2 (no lost wake-up): the worker parks only after state = parked, a fence and
//   a re-check of the rings its mask names (worker_doorbell.hpp); the host's wake check
//   comes after a fence that follows both its push and its fetch_or.
//   So the per-call cost for host h is its ring push and a relaxed load of the mask; an RMW
//   only when bit h of that seat was clear (a ring that ran dry), never one word shared
//   by all hosts per call.
//   Stuck calls (stuck_scan.hpp): worker w publishes the record of host h it runs in its
//   slot's current_of[h], so host h finds its own running calls and nobody else's. In its
//   drain, h declares one past its stuck_after: CAS running -> stuck (losing means it just
//   finished), clear current_of[h], deliver errc::stuck (or timed_out) here, drop the
//   handler, and take the record out of its count: from then on the record belongs to the
//   seat, not to h. Then h asks the builder, which owns the seats, to retire that worker:
//   retire_requests[w] = record, retire_requested = true (release), builder's bell. The
//   builder takes the seat in its next drain or at shutdown ("Retiring a worker",
//   worker_seats.cpp) and frees the record when the task returns, or leaves it to the
//   thread. Until then, h's rings into seat w wait for the seat's next worker (or a thief).
//   Leaving (on host h's thread): stop accepting, cancel every call not started
//   (errc::cancelled, delivered here), pop its own rings and free what it finds (all of it
//   abandoned), then drain until every record is back or declared stuck. Only then does
//   pool_impl release the index (under its mutex). The object itself lives as long as the
//   pool, so a worker or thief that read a stale bit and touches these rings afterwards
//   finds them empty.
//   A later thread attaching at the same index becomes the rings' producer through that
//   mutex (the previous producer's writes happen before it).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "call_allocator.hpp"
#include "call_table.hpp"
#include "deadline_queue.hpp"
#include "dispatch_policy.hpp"
#include "host_doorbell.hpp"
#include "knit/job_ring.hpp"
#include "knit/pool.hpp"
#include "pool_shared.hpp"
#include "stuck_scan.hpp"

namespace knit::detail {

class host_state {
 public:
  host_state(pool_shared& shared, unsigned index, std::size_t per_ring);
  ~host_state();
  host_state(const host_state&) = delete;
  host_state& operator=(const host_state&) = delete;

  // pool_impl, under its attach mutex, on the attaching thread.
  void attach() noexcept;
  // The host's own thread: cancel what has not started, wait for the rest to come back.
  void leave();

  // Host h's thread only (pool.cpp routes each public call here by thread).
  std::error_code admit();
  void* allocate(std::size_t size, std::size_t align, std::uint32_t& block);
  void free_memory(void* p, std::uint32_t block) noexcept { allocator_.free(p, block); }
  call_id enqueue(call_base* c, const call_options& options);
  bool cancel(call_id id);
  std::size_t drain(bool reset_doorbell);
  shutdown_report give_up();
  std::optional<std::chrono::steady_clock::time_point> next_deadline();
  std::size_t pending() const noexcept { return pending_; }
  bool accepting() const noexcept;
  std::chrono::nanoseconds call_time_estimate() const noexcept {
    return std::chrono::nanoseconds(call_ns_estimate_);
  }
  int completion_fd() const noexcept { return bell_.fd(); }
  unsigned index() const noexcept { return index_; }

  // Any thread: this host's counters (single-writer relaxed atomics).
  host_stats stats() const noexcept;

  // Workers: the ring into seat `w`, and the hand-back of a finished or skipped record.
  job_ring<call_base*>& ring(unsigned w) noexcept { return *rings_[w]; }
  // Returns true if it wrote the eventfd (the worker counts it).
  bool complete(call_base* c) noexcept;

  // Bytes this host's rings hold (the memory formula's per-host term).
  std::size_t ring_bytes() const noexcept;

 private:
  bool dispatch(call_base* c);
  void flush_backlog();
  std::size_t pop_done();
  std::size_t expire_deadlines(std::chrono::steady_clock::time_point now);
  std::size_t check_stuck(std::chrono::steady_clock::time_point now);
  bool give_up_on(const running_call& r, std::error_code ec);
  void request_retirement(unsigned seat, call_base* stuck) noexcept;
  std::size_t abandon_queued();
  void reclaim_rings() noexcept;
  void deliver(call_base* c, std::error_code ec) noexcept;

  pool_shared& shared_;
  const unsigned index_;
  std::vector<std::unique_ptr<job_ring<call_base*>>> rings_;  // rings_[w]: into seat w
  host_doorbell bell_;
  // Finished or skipped records, newest first. Writers: the workers (CAS, release);
  // partner: the host's exchange (acquire) in pop_done, which takes the whole list.
  alignas(kCacheLine) std::atomic<call_base*> done_head_{nullptr};

  // Host h's thread only from here on.
  alignas(kCacheLine) call_allocator allocator_;
  call_table calls_;
  std::deque<call_base*> backlog_;
  deadline_queue deadlines_;
  std::vector<worker_snapshot> snapshots_;
  std::size_t pending_ = 0;
  std::size_t out_ = 0;  // records in rings or held by workers
  unsigned next_ = 0;
  std::int64_t call_ns_estimate_ = 0;
  std::int64_t wake_cost_ns_ = 0;
  std::int64_t min_stuck_ns_ = 0;  // smallest stuck_after in use; 0 = detection off
  bool accepting_ = false;
  bool draining_ = false;

  // Written by host h only (relaxed load + store); read by pool::stats on any thread.
  struct counters {
    single_writer_counter calls_submitted, calls_completed, calls_rejected, calls_backlogged,
        calls_cancelled, calls_timed_out, calls_failed, calls_stuck, host_wakes, completion_batches;
  };
  counters counters_;
};

// This thread's attached host in `pool`, or null (a thread may be a host of a few pools).
host_state* bound_host(const void* pool) noexcept;
// Records (or, with null, forgets) this thread's host in `pool`. Throws std::logic_error
// when this thread is already a host of too many pools.
void bind_host(const void* pool, host_state* host);

}  // namespace knit::detail
