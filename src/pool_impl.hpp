// pool_impl: the host side of knit::pool, one class in three files. src/pool.cpp holds
// admission, enqueue, the backlog, drain (completions, deadlines), cancel and shutdown;
// src/dispatch.cpp the push of a call into the ring the dispatch rule chose;
// src/worker_seats.cpp the worker seats and their retirement (stuck calls, replacement
// threads, handing a stuck record over), with that protocol at its head.
// Every member is the host thread's, except what pool_shared and the slots share with the
// workers (pool_shared.hpp), and the attached hosts' table (under hosts_mutex_). Attached
// hosts keep their own state in host_state.hpp; attach and release are in pool_host.cpp.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "call_allocator.hpp"
#include "call_table.hpp"
#include "deadline_queue.hpp"
#include "dispatch_policy.hpp"
#include "host_state.hpp"
#include "knit/pool.hpp"
#include "pool_shared.hpp"
#include "thread_token.hpp"

namespace knit::detail {

// Adds one host's counters to the pool's totals (all but calls_stuck: pool_impl::stats).
void add_host_totals(pool_stats& s, const host_stats& one) noexcept;

class pool_impl {
 public:
  explicit pool_impl(const pool_options& options);
  ~pool_impl();

  std::error_code admit();
  void* allocate(std::size_t size, std::size_t align, std::uint32_t& block);
  void free_memory(void* p, std::uint32_t block) noexcept { allocator_.free(p, block); }
  call_id enqueue(call_base* c, const call_options& options);
  bool cancel(call_id id);
  std::size_t drain(bool reset_doorbell = true);
  std::optional<std::chrono::steady_clock::time_point> next_deadline();
  // `from_destructor`: ~pool, which may run on any thread, skips the host check.
  shutdown_report shutdown(shutdown_mode mode,
                           std::optional<std::chrono::steady_clock::time_point> deadline,
                           bool from_destructor = false);
  pool_stats stats() const;

  const pool_options& options() const noexcept { return shared_.options; }
  int completion_fd() const noexcept { return shared_.host_bell.fd(); }
  std::size_t pending() const noexcept { return pending_; }
  std::chrono::nanoseconds call_time_estimate() const noexcept {
    return std::chrono::nanoseconds(call_ns_estimate_);
  }
  bool accepting() const noexcept { return accepting_; }

  // The calling thread's attached host, or null (then it is the first host or no host:
  // the first host's checks throw for a stranger). One relaxed load while none is attached.
  host_state* attached_here() const noexcept {
    if (attached_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    if (is_first_host()) return nullptr;
    return bound_host(this);
  }
  bool is_first_host() const noexcept { return this_thread_token() == host_token_; }
  // pool_host.cpp: a free index for the calling thread, and its release after leave().
  host_state* attach_host();
  void release_host(host_state* h) noexcept;
  // The index itself (release_host, or the host's last step after a leave inside it).
  void free_index(host_state* h) noexcept;
  // "Retiring a worker" for an attached host's stuck call, on that host's thread: `slot`
  // runs `stuck` in seat `seat`; the seat gets a fresh worker at once.
  void retire_seat_for(unsigned seat, worker_slot* slot, call_base* stuck) noexcept;
  // The attached hosts' counters, for stats().
  void attached_stats(pool_stats& s, const host_stats& first) const;

 private:
  // pool.cpp: the host's own steps.
  void check_host(const char* what) const;
  std::size_t drain_round(bool reset_doorbell);  // drain() past its host check
  std::size_t pop_done(worker_slot& w, std::size_t& returned);
  void flush_backlog();
  std::size_t expire_deadlines(std::chrono::steady_clock::time_point now);
  std::size_t abandon_queued();
  void deliver(call_base* c, std::error_code ec) noexcept;
  void destroy(call_base* c) noexcept { allocator_.destroy(c); }

  // dispatch.cpp: false if no ring can take the call now.
  bool dispatch(call_base* c);

  // worker_seats.cpp: the seats and their retirement ("Retiring a worker" there).
  void start_workers();
  void await_sched();
  std::size_t check_stuck(std::chrono::steady_clock::time_point now);
  bool retire(unsigned i, call_base* c, std::error_code ec, bool replace);
  void take_seat(unsigned i, call_base* stuck, bool replace);
  void mark_retired(const std::shared_ptr<worker_slot>& slot, call_base* stuck, bool attached);
  std::shared_ptr<worker_slot> start_fresh_slot(unsigned i, worker_slot& old) noexcept;
  void take_retire_requests(bool replace);
  void destroy_stuck(worker_slot& w) noexcept;
  void replace_retired_seats() noexcept;
  void collect_handoffs() noexcept;
  void flush_retired_rings();
  std::size_t give_up_running();
  void stop_workers(shutdown_report& report) noexcept;

  pool_shared shared_;
  // The builder's thread token (thread_token.hpp), written once before any other thread can
  // see the pool: read by every host's submit, so never rewritten (the destructor on another
  // thread skips the check instead).
  const std::uint64_t host_token_;
  // Guards shared_.seats' stores, and retire_stuck / successor in every slot: the builder
  // and the attached hosts all retire workers (worker_seats.cpp).
  mutable std::mutex seats_mutex_;
  std::uint64_t workers_replaced_ = 0;      // under seats_mutex_: as each thread starts
  std::uint64_t attached_retirements_ = 0;  // under seats_mutex_: attached hosts' retired seats
  call_allocator allocator_;
  std::vector<std::shared_ptr<worker_slot>> slots_;  // slots_[i] is seat i's slot (host's view)
  std::shared_ptr<worker_slot> retired_head_;        // retired slots, newest first
  call_table calls_;                                 // accepted calls by id, until delivered
  std::deque<call_base*> backlog_;                   // accepted, waiting for ring space
  deadline_queue deadlines_;  // call deadlines, earliest first (stale ones dropped lazily)
  std::size_t pending_ = 0;   // accepted, handler not called yet
  std::size_t out_ = 0;       // records in call rings or held by live workers
  std::size_t per_ring_ = 0;
  std::int64_t min_stuck_ns_ = 0;           // smallest stuck_after in use; 0 = detection off
  unsigned next_ = 0;                       // dispatch's scan starts here (round robin)
  std::int64_t call_ns_estimate_ = 0;       // estimate of one call's duration (dispatch rule 2)
  std::int64_t wake_cost_ns_ = 0;           // options.wake_cost_us in ns
  std::vector<worker_snapshot> snapshots_;  // dispatch's scratch, one per seat
  bool accepting_ = true;
  bool draining_ = false;
  bool stopped_ = false;
  bool needs_replacement_ = false;
  host_counters counters_;  // this host's (host 0's); the pool's totals add the others'
  // Retired slots whose stuck record is not back. Writer: the builder; partner: stats()'s
  // relaxed load on any host (a level, not a hand-off).
  std::atomic<std::size_t> retired_running_{0};

  // Attached hosts (pool_host.cpp). Guarded by hosts_mutex_, except attached_count_,
  // which attached_here() reads relaxed (written under the mutex; a thread reads its own
  // attach through it, or a stale non-zero that only costs a lookup).
  void await_attached_hosts(std::optional<std::chrono::steady_clock::time_point> deadline);
  void wake_attached_hosts() noexcept;
  mutable std::mutex hosts_mutex_;
  std::condition_variable hosts_left_;
  std::vector<std::unique_ptr<host_state>> host_states_;  // [h], made on first attach at h
  std::vector<bool> host_in_use_;
  alignas(kCacheLine) std::atomic<unsigned> attached_count_{0};
};

}  // namespace knit::detail
