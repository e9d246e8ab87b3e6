// pool_impl: what a knit::pool owns, apart from its hosts' own steps (host_state.hpp, the
// same for every host): the worker seats (start, retire, replace, stop: worker_seats.cpp),
// the hosts table (host 0, the building thread, made here; attach and release in
// pool_host.cpp) and shutdown (pool.cpp). Shared with the workers through pool_shared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "host_state.hpp"
#include "knit/pool.hpp"
#include "pool_shared.hpp"
#include "thread_token.hpp"

namespace knit::detail {

class pool_impl {
 public:
  explicit pool_impl(const pool_options& options);
  ~pool_impl();

  // The calling thread's host, or null: host 0 by its thread token, an attached host by
  // the thread's binding (none while no host is attached: one relaxed load).
  host_state* host_here() const noexcept {
    if (this_thread_token() == host_token_) return first_;
    if (attached_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    return bound_host(this);
  }
  // host_here(), or the std::logic_error every host-only call throws for a stranger.
  host_state& host_for(const char* what) const;
  // What a noexcept query reads on a thread that is no host: host 0's (as it always did).
  host_state& host_or_first() const noexcept {
    host_state* h = host_here();
    return h ? *h : *first_;
  }

  // `from_destructor`: ~pool, which may run on any thread, skips the host check.
  shutdown_report shutdown(shutdown_mode mode,
                           std::optional<std::chrono::steady_clock::time_point> deadline,
                           bool from_destructor = false);
  pool_stats stats() const;
  const pool_options& options() const noexcept { return shared_.options; }

  // pool_host.cpp: a free index for the calling thread, and its release after leave().
  host_state* attach_host();
  void release_host(host_state* h) noexcept;
  // The index itself (release_host, or the host's last step after a leave inside it).
  void free_index(host_state* h) noexcept;
  // A leaving host's share of the shutdown report: what it gave up past the pool's
  // deadline (on its own thread, before it releases its index).
  void add_given_up(const shutdown_report& given) noexcept;

  // worker_seats.cpp, on any host's thread ("Retiring a worker" there): seat `seat`, run by
  // `slot`, has a stuck record its host gave up; a fresh worker takes the seat at once.
  void retire_seat(unsigned seat, worker_slot* slot, call_base* stuck) noexcept;
  // Any host's drain, when shared_.seats_need_care is set: frees the stuck records whose
  // task returned and retries seats whose replacement could not start.
  void tend_seats() noexcept;

 private:
  // worker_seats.cpp.
  void start_workers();
  void await_sched();
  std::shared_ptr<worker_slot> start_fresh_slot(unsigned i, worker_slot& old) noexcept;
  void collect_handoffs() noexcept;
  void stop_workers(shutdown_report& report) noexcept;
  // pool_host.cpp.
  void await_attached_hosts(std::optional<std::chrono::steady_clock::time_point> deadline,
                            shutdown_report& report);
  void wake_attached_hosts() noexcept;

  pool_shared shared_;
  // Host 0's thread token (thread_token.hpp), written once before any other thread can see
  // the pool: read by every host's submit, so never rewritten (the destructor on another
  // thread skips the check instead).
  const std::uint64_t host_token_;
  std::size_t per_ring_ = 0;  // queue_capacity rounded up to a power of two
  bool stopped_ = false;      // host 0's (shutdown)

  // The seats (worker_seats.cpp). Guarded by seats_mutex_: shared_.seats' stores and each
  // slot's retired, stuck_record and next_retired; any host retires a worker.
  mutable std::mutex seats_mutex_;
  std::vector<std::shared_ptr<worker_slot>> slots_;  // slots_[i]: seat i's current slot
  std::shared_ptr<worker_slot> retired_head_;        // retired slots, newest first
  std::uint64_t workers_replaced_ = 0;               // as each fresh thread starts
  std::uint64_t retirements_ = 0;                    // seats retired for a stuck record
  bool seats_closed_ = false;                        // stop_workers began: no fresh workers
  // Retired slots whose stuck record is not back. Writer: under seats_mutex_; partner:
  // stats()'s relaxed load (a level, not a hand-off).
  std::atomic<std::size_t> retired_running_{0};

  // The hosts. Guarded by hosts_mutex_, except attached_count_, which host_here() reads
  // relaxed (written under the mutex; a thread reads its own attach through it, or a stale
  // non-zero that only costs a lookup).
  mutable std::mutex hosts_mutex_;
  std::condition_variable hosts_left_;
  std::vector<std::unique_ptr<host_state>> host_states_;  // [h], made when h is first used
  std::vector<bool> host_in_use_;
  shutdown_report given_up_by_hosts_;  // add_given_up's sum, read by the shutdown
  host_state* first_ = nullptr;        // host_states_[0], the building thread's
  alignas(kCacheLine) std::atomic<unsigned> attached_count_{0};  // hosts other than host 0
};

}  // namespace knit::detail
