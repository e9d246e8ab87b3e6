// pool_impl: what a knit::pool owns, apart from its hosts' own steps (host_state.hpp, the
// same for every host): the worker seats (start, retire, replace, stop: worker_seats.cpp),
// the hosts table (attach, take-over and release: pool_host.cpp) and shutdown (pool.cpp).
// Shared with the workers through pool_shared.
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
  // The CPUs of a worker with none of its own: the building thread's mask (worker
  // threads, worker_thread.hpp; worker processes, process/starter.hpp).
  const cpu_set_t& unpinned_cpus() const noexcept { return shared_.unpinned_cpus; }

  // The calling thread's host, or null: the building thread's own attachment (held by the
  // pool, made at its first submit) by its thread token, an attached host by the thread's
  // binding (none while no host is bound: one relaxed load).
  host_state* host_here() const noexcept {
    // builder_host_ is written only on the building thread (under hosts_mutex_, which other
    // threads take to read it), so its own unlocked read here is no race.
    if (on_builder_thread() && builder_host_) return builder_host_;
    if (bound_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    return bound_host(this);
  }
  bool on_builder_thread() const noexcept { return this_thread_token() == builder_token_; }
  // host_here(), or the std::logic_error every host-only call throws for a stranger.
  host_state& host_for(const char* what) const;
  // submit's host: host_here(); on the building thread that is no host, its own attachment,
  // made now (null if the pool no longer accepts: submit then returns errc::shut_down).
  // @throws std::logic_error for a stranger, or when max_hosts hosts are attached.
  host_state* host_to_submit();
  // drain, poll and cancel: host_here(); null on the building thread that is no host (it
  // has no call: nothing to do); the std::logic_error on any other thread.
  host_state* host_or_builder(const char* what) const;
  // pool::completion_fd: the host's fd; the building thread that is no host attaches (as
  // submit does) so that a loop may watch the fd before its first call; -1 elsewhere.
  int completion_fd() noexcept;

  // Any thread (pool.cpp, knit/pool.hpp's "Shutdown"). `from_destructor`: ~pool, which may
  // finish the building thread's attachment on the destructor's thread.
  shutdown_report shutdown(shutdown_mode mode,
                           std::optional<std::chrono::steady_clock::time_point> deadline,
                           bool from_destructor = false);
  bool closed() const noexcept { return shared_.closed.load(std::memory_order_acquire); }
  pool_stats stats() const;
  const pool_options& options() const noexcept { return shared_.options; }

  // pool_host.cpp: a free index for the calling thread (or the building thread's own
  // attachment, taken over), and its release after leave().
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
  // lent_workers.cpp: a host's calls wait behind long calls on every worker.
  void lend_worker() noexcept;

 private:
  enum class stop_phase { running, stopping, stopped };

  // worker_seats.cpp.
  void start_workers();
  void await_sched();
  std::shared_ptr<worker_slot> start_fresh_slot(unsigned i, worker_slot& old) noexcept;
  void collect_handoffs() noexcept;
  void stop_workers(shutdown_report& report) noexcept;
  // lent_workers.cpp.
  void make_lent_slots();
  void retire_lent(unsigned k, worker_slot* slot, call_base* stuck) noexcept;
  void join_lent() noexcept;
  std::uint64_t lent_now() const noexcept;
  worker_stats lent_counters() const noexcept;
  // pool_host.cpp. Under hosts_mutex_: the first free index, its state made if it is new
  // (@throws std::logic_error when max_hosts hosts are attached); then taken for a host.
  unsigned free_index_or_throw(const char* who);
  void take_index(unsigned h) noexcept;
  host_state* attach_builder();
  // pool.cpp / pool_host.cpp: the shutdown's steps around the hosts.
  void took_part(host_state* h, const shutdown_report& given, bool into_report) noexcept;
  void await_hosts(std::optional<std::chrono::steady_clock::time_point> deadline,
                   shutdown_report& report);
  bool every_host_took_part() const noexcept;  // under hosts_mutex_
  void wake_hosts() noexcept;

  pool_shared shared_;
  // The building thread's token (thread_token.hpp), written once before any other thread
  // can see the pool: read by every host's submit, so never rewritten.
  const std::uint64_t builder_token_;
  std::size_t per_ring_ = 0;  // queue_capacity rounded up to a power of two

  // The seats (worker_seats.cpp). Guarded by seats_mutex_: shared_.seats' stores and each
  // slot's retired, stuck_record and next_retired; any host retires a worker.
  mutable std::mutex seats_mutex_;
  std::vector<std::shared_ptr<worker_slot>> slots_;       // slots_[i]: seat i's current slot
  std::shared_ptr<worker_slot> retired_head_;             // retired slots, newest first
  std::uint64_t workers_replaced_ = 0;                    // as each fresh thread starts
  std::uint64_t retirements_ = 0;                         // seats retired for a stuck record
  bool seats_closed_ = false;                             // stop_workers began: no fresh workers
  std::vector<std::shared_ptr<worker_slot>> lent_slots_;  // [k]: lent slot k (lent_workers.cpp)
  std::uint64_t lent_started_ = 0;                        // lent threads started
  std::uint64_t lent_retired_stuck_ = 0;                  // lent workers retired for a stuck call
  // Retired slots whose stuck record is not back. Writer: under seats_mutex_; partner:
  // stats()'s relaxed load (a level, not a hand-off).
  std::atomic<std::size_t> retired_running_{0};

  // The hosts and the shutdown's progress. Guarded by hosts_mutex_, except bound_count_,
  // which host_here() reads relaxed (written under the mutex; a thread reads its own attach
  // through it, or a stale non-zero that only costs a lookup), and builder_host_ (see
  // host_here()).
  mutable std::mutex hosts_mutex_;
  // Notified under hosts_mutex_ when a host leaves or takes part in the shutdown, and when
  // the shutdown ends: a waiter may destroy the pool as soon as it has the lock back, so
  // the notifier touches nothing of the pool after it.
  std::condition_variable hosts_changed_;
  std::vector<std::unique_ptr<host_state>> host_states_;  // [h], made when h is first used
  std::vector<bool> host_in_use_;
  std::vector<bool> took_part_;         // [h]: its part of the shutdown is done (steps 2, 3)
  shutdown_report given_up_by_hosts_;   // what other hosts gave up, read by the shutdown
  host_state* builder_host_ = nullptr;  // the building thread's own attachment, if held
  stop_phase stop_phase_ = stop_phase::running;
  alignas(kCacheLine) std::atomic<unsigned> bound_count_{0};  // hosts known by binding
};

}  // namespace knit::detail
