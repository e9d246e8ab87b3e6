// host_state: one host's side of the pool, the same for every host: the building thread's
// own attachment (made at its first submit) and each thread attached with knit::pool_host:
// its submission rings into every worker seat, its completion rings, list, eventfd, call table,
// backlog, deadlines, admission and counters. Its steps are in host_state.cpp (attach,
// admission, dispatch), host_drain.cpp (drain, cancel, delivery) and host_stop.cpp (giving
// up, leaving, its part of the shutdown). The workers' side of it is worker.cpp
// (claim_in_turn, clear_empty_rings, complete); the seats themselves are the pool's
// (worker_seats.cpp).
//
// Protocol (many hosts, one pool; the argument is docs/many-hosts.md)
//   Rings. Host h pushes into ring(h, w), a job_ring (one producer: host h; consumers:
//   worker w, thieves, and host h itself while it leaves or gives up).
//   Completions. Worker w hands a record it took from its own seat's ring(h, w) back
//   through done(h, w), a done_ring (one producer: the worker in seat w; one consumer:
//   host h). Every other record, and one that finds done(h, w) full, goes through h's
//   completion list, a push-only stack (CAS by any worker, or by h for its process ring;
//   h loads it and, only when it is not empty, takes it whole with one exchange): stolen
//   calls, a lent worker's, the process ring's. Then the worker notifies h's own
//   host_doorbell: one coalesced eventfd write per round, and none while h is already
//   signalled (host_doorbell.hpp). Host h counts the records it pushed into ring(h, w)
//   and has not taken back (out_in_seat_[w]); its drain, after the doorbell's fence, pops
//   done(h, w) for every seat with a count, then takes the list. A record in done(h, w)
//   came from ring(h, w), so its seat's count is not zero until the host pops it: the
//   doorbell's guarantee covers the rings it scans. Order: one seat's completions come in
//   the order they finished, except past a full ring (the list may overtake the ring).
//   A retired worker never completes again (it hands its stuck record over instead), so
//   done(h, w) keeps one producer: the fresh worker's first push happens after the old
//   one's last (the old worker's release of its stuck call in current_of, read by the
//   retiring host before it starts the fresh thread); a host index reused by a later
//   thread takes the consumer's end through the pool's attach mutex.
//   Which hosts have work for seat w: the bits of seat_pending(w), a 64-bit mask. A bit
//   is cleared only by worker w on its way to parking, never while it runs or spins, so a
//   set bit may name an empty ring (the worker then finds it empty: a pop, no RMW).
//     host h, after a push into ring(h, w):      worker w, going to park, for each bit h
//       fence(seq_cst)                            whose ring(h, w) it finds empty:
//       if !(mask & bit h):                         mask.fetch_and(~bit h)
//         mask.fetch_or(bit h)                      fence(seq_cst)
//         fence(seq_cst)                            if ring(h, w) not empty:
//       if bell(w) parked: wake it                    mask.fetch_or(bit h)
//                                                 then state = parked; fence(seq_cst);
//                                                 re-check the rings its mask names
//   Guarantee 1 (no stranded call): either the worker's re-check sees the push, or the
//   host's load sees the cleared bit and sets it again (Dekker on the slot's sequence and
//   the mask).
//   Guarantee 2 (no lost wake-up): the worker parks only after state = parked, a fence and
//   a re-check of the rings its mask names (worker_doorbell.hpp); the host's wake check
//   comes after a fence that follows both its push and its fetch_or.
//   So the per-call cost for host h is its ring push and a relaxed load of the mask; an RMW
//   only when bit h of that seat was clear (its worker parked since h last pushed there),
//   never one word shared by all hosts per call. A stream into a worker that runs or spins
//   between calls, the one-host round trip included, pays no RMW on the mask at all.
//   Stuck calls (stuck_scan.hpp): worker w publishes the record of host h it runs in its
//   slot's current_of[h], so host h finds its own running calls and nobody else's. In its
//   drain, h declares one past its stuck_after: CAS running -> stuck (losing means it just
//   finished), clear current_of[h], deliver errc::stuck (or timed_out) here, drop the
//   handler, and take the record out of its count: from then on the record belongs to the
//   seat, not to h. Then h retires that worker itself (worker_seats.cpp, retire_seat,
//   under the seats mutex): the old slot joins the pool's retired list holding the record,
//   a fresh slot and thread take the seat at once. The rings belong to the seat, so the
//   fresh worker runs what every host queued behind the stuck call. When the task returns,
//   the next host to drain frees the record (tend_seats); at shutdown the pool does.
//   Leaving (an attached host, on its thread): stop accepting, cancel every call not
//   started (errc::cancelled, delivered here), pop its own rings and free what it finds
//   (all of it abandoned), then drain until every record is back or declared stuck (settle).
//   Only then does pool_impl release the index (under its mutex); leaving from inside one
//   of h's own handlers finishes the enclosing drain's work (taken_) and the index waits
//   until that step ends (step_scope). The object itself lives as long as the pool, so a
//   worker or thief that read a stale bit and touches these rings afterwards finds them
//   empty. A later thread attaching at the same index becomes the rings' producer through
//   that mutex (the previous producer's writes happen before it).
//   Held checks (pool_options::wake_at_turn_end, on a host that holds them): the host
//   loads the mask before its push (relaxed, no fence: a hint). A clear bit is set at once
//   (fence, fetch_or, fence as above). Otherwise the fence, the mask step and the wake
//   check of that seat wait for flush_wakes: one fence per seat per turn instead of one
//   per call (a seat whose ring is empty by then needs no more: its worker took every
//   call). Whether the wake itself waits: with a CPU for every worker beside the host
//   (held checks) a worker whose bit was clear (it parked, or is on its way) is rung at
//   once; with workers on the host's CPU (held wakes) every wake waits for the
//   flush, where a woken worker takes the whole turn's calls at once.
//   Guarantee 1 still holds: if the worker's re-check misses the push, its fence came
//   before the flush's, so the flush's mask load sees the cleared bit and sets it again
//   (a relaxed load that saw the bit set before that fence is only a hint: the worker may
//   have cleared it since and parked, having found the ring still empty). Guarantee 2:
//   the flush's wake check follows its fence, which follows the turn's pushes; a worker
//   that parked meanwhile stays parked until a ringer's CAS (or its own park timeout), so
//   the check finds it. What the host must keep: no owed check outlives the turn. Every
//   drain ends with a flush (so do leave and the shutdown's settle, which drain),
//   hold_wakes(false) flushes, and knit::asio_host posts a flush after a submit, which
//   runs before its io_context next blocks.
//   Shutdown (knit/pool.hpp's steps, from any thread): each host settles on its own
//   thread, as its part: the caller's own host inside the call (finish), any other when
//   it leaves or calls shutdown itself. It settles against the shutdown's deadline, once
//   the shutdown has published it (pool_shared::stop_deadline_ns, before `closed`): past
//   it, the host gives up what it has left (give_up) on its own thread and takes back its
//   rings, and the shutdown's report adds what it gave up.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "call_allocator.hpp"
#include "call_table.hpp"
#include "deadline_queue.hpp"
#include "dispatch_policy.hpp"
#include "done_ring.hpp"
#include "host_doorbell.hpp"
#include "knit/job_ring.hpp"
#include "knit/pool.hpp"
#include "pool_shared.hpp"
#include "stuck_scan.hpp"

namespace knit::detail {

class pool_impl;
class process_ring;  // process/process_ring.hpp
struct process_job;  // knit/process.hpp
struct placed_call;  // call_placement_steps.hpp

class host_state {
 public:
  host_state(pool_impl& owner, pool_shared& shared, unsigned index, std::size_t per_ring);
  ~host_state();
  host_state(const host_state&) = delete;
  host_state& operator=(const host_state&) = delete;

  // pool_impl, under its attach mutex, on the attaching thread.
  void attach() noexcept;
  // The host's own thread: cancel what has not started, wait for the rest to come back.
  // Also from inside one of this host's handlers (a loop destroying its host there): it
  // finishes what the enclosing drain had taken, and the index is released only when that
  // step returns (release_when_steps_end).
  void leave();
  // Whether a step that runs handlers (drain, poll, cancel, give_up) is under way on this
  // host; then releasing the index waits for it: release_when_steps_end() asks for that.
  bool in_step() const noexcept { return steps_ > 0; }
  void release_when_steps_end() noexcept { release_deferred_ = true; }
  // The pool's shutdown, on its thread: makes this host's completion fd readable, so a loop
  // asleep on it learns that accepting() turned false.
  void wake() noexcept { bell_.notify(); }
  // This host's part of the pool's shutdown (steps 2 and 3 in knit/pool.hpp), when the
  // shutdown is called on its thread: every call of its own delivered and every record
  // back, or, past `deadline` (without one: the shutdown's), given up.
  void finish(shutdown_mode mode, std::optional<std::chrono::steady_clock::time_point> deadline,
              shutdown_report& report);

  // Host h's thread only (pool.cpp sends each public call here by thread).
  std::error_code admit();
  void* allocate(std::size_t size, std::size_t align, std::uint32_t& block);
  void free_memory(void* p, std::uint32_t block) noexcept { allocator_.free(p, block); }
  call_id enqueue(call_base* c, const call_options& options);
  call_id enqueue_process(call_base* c, const call_options& options,
                          const std::shared_ptr<process_job>& job);
  bool cancel(call_id id);
  // How a drain treats the doorbell: none (poll: untouched), read (reset, reading the
  // eventfd: a watch that fires while it is readable), no_read (reset without the read: a
  // watch that fires on every write, completion_watch::each_write).
  enum class doorbell_reset { none, read, no_read };
  std::size_t drain(doorbell_reset reset);
  // Held checks ("Held checks" in the protocol above): returns whether they are held now.
  bool hold_wakes(bool on) noexcept;
  void flush_wakes() noexcept;
  shutdown_report give_up();
  std::optional<std::chrono::steady_clock::time_point> next_deadline();
  std::size_t pending() const noexcept { return pending_; }
  bool accepting() const noexcept;
  std::chrono::nanoseconds call_time_estimate() const noexcept {
    return std::chrono::nanoseconds(call_ns_estimate_);
  }
  // The process ring's epoll fd (over bell_) when process tasks are registered.
  int completion_fd() const noexcept { return ring_fd_ >= 0 ? ring_fd_ : bell_.fd(); }
  unsigned index() const noexcept { return index_; }

  // Any thread: this host's counters (single-writer relaxed atomics).
  host_stats stats() const noexcept;
  // Calls the host ring declared stuck (in stats().calls_stuck too): no seat was retired
  // for them, so the pool adds them to its retirements. Any thread.
  std::uint64_t ring_calls_stuck() const noexcept { return counters_.ring_calls_stuck.get(); }
  // Children the host ring lent, and retired (pool::stats adds them to the lent workers').
  // Any thread.
  std::uint64_t ring_lent_started() const noexcept { return counters_.ring_lent_started.get(); }
  std::uint64_t ring_lent_retired() const noexcept { return counters_.ring_lent_retired.get(); }

  // Workers: the ring into seat `w`, and the hand-back of a finished or skipped record.
  job_ring<call_base*>& ring(unsigned w) noexcept { return *rings_[w]; }
  // The worker in seat `seat` hands back a record it took from its own ring(this, seat);
  // any other (stolen, lent) passes kNoSeat. Returns true if it wrote the eventfd (the
  // worker counts it).
  static constexpr unsigned kNoSeat = ~0u;
  bool complete(call_base* c, unsigned seat) noexcept;

  // Bytes this host's rings hold (the memory formula's per-host term).
  std::size_t ring_bytes() const noexcept;

 private:
  // Counts a step that may run handlers; the last one to end releases a deferred leave.
  class step_scope {
   public:
    explicit step_scope(host_state& h) noexcept : h_(h) { ++h_.steps_; }
    ~step_scope();
    step_scope(const step_scope&) = delete;
    step_scope& operator=(const step_scope&) = delete;

   private:
    host_state& h_;
  };

  std::size_t drain_steps(doorbell_reset reset);
  call_id publish(const placed_call& placed, call_base* c);
  void settle(std::optional<std::chrono::steady_clock::time_point> own_deadline,
              shutdown_report& report);
  std::optional<std::chrono::steady_clock::time_point> pool_deadline() const noexcept;
  std::size_t deliver_taken() noexcept;
  std::size_t take_back(call_base* c) noexcept;  // a record back from a worker: 1 if delivered
  void count_out(unsigned w) noexcept;           // a record pushed into ring(h, w)
  void count_back(std::uint32_t w) noexcept;     // one of those back, or given up
  bool dispatch(call_base* c);
  int choose_ring() noexcept;  // dispatch's rule over several seats; -1: every ring full
  // This host's bit in every seat's mask (seat_pending).
  std::uint64_t mask_bit() const noexcept { return std::uint64_t{1} << index_; }
  void check_seat(unsigned w, bool ring) noexcept;     // fence, mask step, wake check
  void mask_and_wake(unsigned w, bool ring) noexcept;  // the same after the fence
  void flush_backlog();
  std::size_t pop_done();
  std::size_t expire_deadlines(std::chrono::steady_clock::time_point now);
  std::size_t check_stuck(std::chrono::steady_clock::time_point now);
  bool give_up_on(const running_call& r, std::error_code ec);
  // lent_workers.cpp.
  std::optional<std::int64_t> lend_due(std::optional<std::int64_t> now) const;
  void lend_if_starved(std::int64_t now);
  bool wake_a_sleeper_for_held_calls(std::int64_t now);
  std::size_t abandon_queued();
  void reclaim_rings() noexcept;
  void deliver(call_base* c, std::error_code ec) noexcept;
  void complete_quietly(call_base* c) noexcept;  // complete() without the eventfd

  pool_impl& owner_;
  pool_shared& shared_;
  const unsigned index_;
  std::vector<std::unique_ptr<job_ring<call_base*>>> rings_;  // rings_[w]: into seat w
  host_doorbell bell_;
  // done_rings_[w]: done(h, w) in the protocol (producer: seat w's worker; consumer: h).
  std::vector<std::unique_ptr<done_ring<call_base*>>> done_rings_;
  // Finished or skipped records that did not come through a done ring, newest first.
  // Writers: the workers and this host (CAS, release); partner: the host's exchange
  // (acquire) in pop_done, which takes the whole list.
  alignas(kCacheLine) std::atomic<call_base*> done_head_{nullptr};

  // Host h's thread only from here on.
  alignas(kCacheLine) call_allocator allocator_;
  call_table calls_;
  std::deque<call_base*> backlog_;
  deadline_queue deadlines_;
  std::vector<worker_snapshot> snapshots_;
  std::size_t pending_ = 0;
  std::size_t out_ = 0;  // records in rings or held by workers
  // Of out_, those pushed into ring(h, w) (out_in_seat_[w]), and a bit per seat whose
  // count is not zero: the seats pop_done scans.
  std::vector<std::uint32_t> out_in_seat_;
  std::vector<std::uint64_t> seats_out_;
  unsigned next_ = 0;
  std::int64_t call_ns_estimate_ = 0;
  std::int64_t wake_cost_ns_ = 0;
  std::int64_t min_stuck_ns_ = 0;  // smallest stuck_after in use; 0 = detection off
  bool accepting_ = false;
  bool draining_ = false;
  unsigned steps_ = 0;             // step_scope depth
  bool release_deferred_ = false;  // left inside a step: release the index when it ends
  // Completions a drain took from done_head_ and has not delivered yet, oldest first. A
  // member, not a local, so that a leave from inside one of their handlers delivers the
  // rest itself and the enclosing drain finds none left.
  call_base* taken_ = nullptr;

  // Written by host h only (relaxed load + store); read by pool::stats on any thread.
  host_counters counters_;

  // This host's ring of worker processes (process/process_ring.hpp): null when no process
  // task was registered when the host attached.
  std::unique_ptr<process_ring> ring_;
  std::string ring_failure_;  // why attach could not make ring_ (its process calls throw it)
  int ring_fd_ = -1;
  // Held checks ("Held checks" in the protocol above): dispatch notes the seat instead of
  // checking it; flush_wakes checks them. none: not held; checks: every worker has a CPU
  // beside the host's (a parked one is still rung at once); wakes: some share it (every
  // wake waits for the flush).
  // Invariant: owed_seats_ lists exactly the seats whose owed_[w] is set, each once, and is
  // empty whenever held_ is none.
  enum class held { none, checks, wakes };
  held held_ = held::none;
  std::vector<unsigned> owed_seats_;
  std::vector<char> owed_;             // owed_[w]: seat w is in owed_seats_ (sized seat_count)
  std::deque<call_base*> no_backlog_;  // always empty: a process call never waits in backlog_
};

// This thread's attached host in `pool`, or null (a thread may be a host of a few pools).
host_state* bound_host(const void* pool) noexcept;
// Records (or, with null, forgets) this thread's host in `pool`. Throws std::logic_error
// when this thread is already a host of too many pools.
void bind_host(const void* pool, host_state* host);

// The doorbell's reset for a drain under `watch` (pool::drain, pool_host::drain).
inline host_state::doorbell_reset reset_for(completion_watch watch) noexcept {
  return watch == completion_watch::each_write ? host_state::doorbell_reset::no_read
                                               : host_state::doorbell_reset::read;
}

}  // namespace knit::detail
