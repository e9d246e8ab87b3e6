// pool: the host side: admission, dispatch to a worker, backlog, completion delivery,
// deadlines, cancellation and shutdown (steps in knit/pool.hpp).
#include "knit/pool.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <deque>
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>

#include "call_allocator.hpp"
#include "pool_shared.hpp"

namespace knit {
namespace detail {

class pool_impl {
 public:
  explicit pool_impl(const pool_options& options) : shared_(options), host_(std::this_thread::get_id()) {
    options.validate();
    const unsigned n = options.threads;
    // Every record the host lets out (in a job ring or held by a worker) may come back
    // through any one worker's done ring (stealing), so each done ring holds them all and
    // enqueue() never lets more than that out: a worker's push can never fail.
    const std::size_t per_ring = std::bit_ceil(std::max<std::size_t>(options.queue_capacity, 1));
    max_out_ = per_ring * n;
    shared_.workers.reserve(n);
    for (unsigned i = 0; i < n; ++i) shared_.workers.push_back(std::make_unique<worker_slot>(per_ring, max_out_));
    for (unsigned i = 0; i < n; ++i) {
      try {
        shared_.workers[i]->thread = std::thread(worker_main, std::ref(shared_), i);
      } catch (...) {
        stop_workers();
        throw;
      }
    }
  }

  ~pool_impl() {
    if (!stopped_) {
      // Destructor path: may run on another thread (documented); skip the host check.
      host_ = std::this_thread::get_id();
      shutdown(shutdown_mode::drain);
    }
  }

  void check_host(const char* what) const {
    if (std::this_thread::get_id() != host_) {
      throw std::logic_error(std::string("knit::pool::") + what +
                             ": called from a thread other than the pool's host thread (the thread that "
                             "constructed the pool); calls must be made from the host thread");
    }
  }

  std::error_code admit() {
    check_host("submit");
    if (!accepting_) {
      ++stats_.calls_rejected;
      return make_error_code(errc::shut_down);
    }
    if (shared_.options.max_pending != 0 && pending_ >= shared_.options.max_pending) {
      ++stats_.calls_rejected;
      return make_error_code(errc::queue_full);
    }
    return {};
  }

  void* allocate(std::size_t size, std::size_t align, std::uint32_t& block) {
    return allocator_.allocate(size, align, block);
  }
  void free_memory(void* p, std::uint32_t block) noexcept { allocator_.free(p, block); }

  call_id enqueue(call_base* c, const call_options& options) {
    // Register in the id table (slots are reused; the sequence makes stale ids miss).
    std::uint32_t index;
    if (!free_slots_.empty()) {
      index = free_slots_.back();
      free_slots_.pop_back();
      live_[index] = c;
    } else {
      index = static_cast<std::uint32_t>(live_.size());
      live_.push_back(c);
    }
    if (++sequence_ == 0) ++sequence_;
    c->id = (std::uint64_t{sequence_} << 32) | index;
    ++pending_;
    ++stats_.calls_submitted;
    if (options.timeout.count() > 0) {
      c->deadline = std::chrono::steady_clock::now() + options.timeout;
      deadlines_.push({c->deadline, c->id});
    }
    if (!backlog_.empty() || !dispatch(c)) {
      backlog_.push_back(c);  // keeps submission order: nothing overtakes the backlog
      ++stats_.calls_backlogged;
    }
    return c->id;
  }

  bool cancel(call_id id) {
    check_host("cancel");
    call_base* c = find(id);
    if (!c) return false;
    call_state expected = call_state::queued;
    if (!c->state.compare_exchange_strong(expected, call_state::abandoned, std::memory_order_acq_rel)) {
      return false;  // running or done: it completes normally
    }
    ++stats_.calls_cancelled;
    deliver(c, make_error_code(errc::cancelled));
    // Not in a ring: it sits in the backlog, and flush_backlog() frees it when it gets there.
    return true;
  }

  std::size_t drain(bool reset_doorbell = true) {
    check_host("drain");
    if (draining_) return 0;  // a handler called drain(): the outer round finishes the job
    draining_ = true;
    std::size_t delivered = 0;
    try {
      if (reset_doorbell) shared_.host_bell.reset();
      std::size_t returned = 0;
      for (auto& w : shared_.workers) {
        call_base* c;
        while (w->done.try_pop(c)) {
          ++returned;
          --out_;
          c->in_ring = false;
          if (c->run_ns != 0) {  // it ran: fold its duration into the estimate (EWMA, 1/8)
            call_ns_estimate_ += (static_cast<std::int64_t>(c->run_ns) - call_ns_estimate_) / 8;
          }
          if (!c->delivered) {
            deliver(c, {});
            ++delivered;
          }
          destroy(c);
        }
      }
      if (returned > 0) ++stats_.completion_batches;
      if (!deadlines_.empty()) delivered += expire_deadlines(std::chrono::steady_clock::now());
      if (!backlog_.empty()) flush_backlog();
    } catch (...) {
      draining_ = false;
      throw;
    }
    draining_ = false;
    return delivered;
  }

  std::optional<std::chrono::steady_clock::time_point> next_deadline() {
    while (!deadlines_.empty()) {
      const auto& top = deadlines_.top();
      call_base* c = find(top.id);
      if (c) return top.when;
      deadlines_.pop();  // delivered already: drop the stale entry
    }
    return std::nullopt;
  }

  void shutdown(shutdown_mode mode) {
    check_host("shutdown");
    if (stopped_) return;
    if (draining_) throw std::logic_error("knit::pool::shutdown: called from inside a completion handler");
    accepting_ = false;  // step 1
    if (mode == shutdown_mode::cancel) {  // step 2
      for (call_base* c : live_) {
        if (!c || c->delivered) continue;
        call_state expected = call_state::queued;
        if (c->state.compare_exchange_strong(expected, call_state::abandoned, std::memory_order_acq_rel)) {
          ++stats_.calls_cancelled;
          deliver(c, make_error_code(errc::cancelled));
        }
      }
    }
    // Step 3: every accepted call delivered and every record back from the workers.
    for (;;) {
      drain();
      if (pending_ == 0 && out_ == 0 && backlog_.empty()) break;
      int timeout_ms = -1;
      if (auto d = next_deadline()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*d - std::chrono::steady_clock::now());
        timeout_ms = static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 60'000));
      }
      pollfd p{shared_.host_bell.fd(), POLLIN, 0};
      ::poll(&p, 1, timeout_ms);
    }
    stop_workers();  // step 4
  }

  pool_stats stats() const {
    pool_stats s = stats_;
    s.threads = static_cast<unsigned>(shared_.workers.size());
    for (const auto& w : shared_.workers) s.workers.push_back(w->counters.snapshot());
    return s;
  }

  const pool_options& options() const noexcept { return shared_.options; }
  int completion_fd() const noexcept { return shared_.host_bell.fd(); }
  std::size_t pending() const noexcept { return pending_; }
  std::chrono::nanoseconds call_time_estimate() const noexcept {
    return std::chrono::nanoseconds(call_ns_estimate_);
  }
  bool accepting() const noexcept { return accepting_; }

 private:
  struct deadline_entry {
    std::chrono::steady_clock::time_point when;
    call_id id;
    bool operator>(const deadline_entry& o) const { return when > o.when; }
  };

  call_base* find(call_id id) const noexcept {
    const std::uint32_t index = static_cast<std::uint32_t>(id & 0xffffffffu);
    if (id == 0 || index >= live_.size()) return nullptr;
    call_base* c = live_[index];
    return (c && c->id == id && !c->delivered) ? c : nullptr;
  }

  // Chooses a worker ring and pushes. Returns false if no ring can take the call now.
  //   1. a spinning worker with an empty ring: it catches the call with no syscall;
  //   2. an awake worker expected to reach the call sooner than a wake-up would take
  //      (options.wake_cost_us): waking costs the host 10-16 µs of CPU here, more than a
  //      /ping (limits.md). Expected wait = what is left of its current call (from the
  //      host's running estimate of a call's duration) + the calls queued before it. A
  //      call already running longer than the estimate is of unknown length, so nothing
  //      queues behind it: that is what keeps a long call from holding others back while
  //      peers sleep. When the worker claims a call and sees more behind it, it wakes a
  //      parked peer itself (worker.cpp), so bursts cost the host nothing;
  //   3. the first parked worker (lowest index: keeps the others in deep sleep), woken;
  //   4. otherwise the shortest ring.
  // The scan starts after the last choice so equal candidates share the load.
  bool dispatch(call_base* c) {
    if (out_ >= max_out_) return false;
    const unsigned n = static_cast<unsigned>(shared_.workers.size());
    int behind = -1, parked = -1, shortest = -1, chosen = -1;
    std::int64_t best_wait = static_cast<std::int64_t>(shared_.options.wake_cost_us) * 1000;
    std::size_t shortest_depth = ~std::size_t{0};
    std::int64_t now = 0;
    for (unsigned k = 0; k < n; ++k) {
      const unsigned i = (next_ + k) % n;
      worker_slot& w = *shared_.workers[i];
      const std::size_t depth = w.jobs.producer_size();
      if (depth >= w.jobs.capacity()) continue;
      const worker_state st = w.bell.state();
      if (depth == 0 && st == worker_state::spinning) {
        chosen = static_cast<int>(i);
        break;
      }
      if (st == worker_state::parked) {
        if (parked < 0 || i < static_cast<unsigned>(parked)) parked = static_cast<int>(i);
      } else if (best_wait > 0) {
        const std::int64_t started = w.call_started_ns.load(std::memory_order_relaxed);
        std::int64_t left = 0;  // between calls: it claims ours next
        bool known = true;
        if (started != 0) {
          if (now == 0) now = steady_now_ns();
          const std::int64_t elapsed = now - started;
          known = elapsed < call_ns_estimate_;
          left = call_ns_estimate_ - elapsed;
        }
        const std::int64_t wait = left + static_cast<std::int64_t>(depth) * call_ns_estimate_;
        if (known && wait < best_wait) {
          best_wait = wait;
          behind = static_cast<int>(i);
        }
      }
      if (depth < shortest_depth) {
        shortest_depth = depth;
        shortest = static_cast<int>(i);
      }
    }
    if (chosen < 0) chosen = behind >= 0 ? behind : parked >= 0 ? parked : shortest;
    if (chosen < 0) return false;  // every ring is full
    worker_slot& w = *shared_.workers[static_cast<unsigned>(chosen)];
    c->in_ring = true;
    if (!w.jobs.try_push(c)) {  // cannot happen: depth < capacity and we are the only producer
      c->in_ring = false;
      return false;
    }
    ++out_;
    next_ = (static_cast<unsigned>(chosen) + 1) % n;
    if (shared_.options.doorbell) {
      std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the worker's park fence
      if (w.bell.wake_if_parked()) ++stats_.host_wakes;
    }
    return true;
  }

  void flush_backlog() {
    while (!backlog_.empty()) {
      call_base* c = backlog_.front();
      if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
        backlog_.pop_front();  // cancelled or timed out while waiting: already delivered
        destroy(c);
        continue;
      }
      if (!dispatch(c)) return;
      backlog_.pop_front();
    }
  }

  std::size_t expire_deadlines(std::chrono::steady_clock::time_point now) {
    std::size_t n = 0;
    while (!deadlines_.empty() && deadlines_.top().when <= now) {
      const call_id id = deadlines_.top().id;
      deadlines_.pop();
      call_base* c = find(id);
      if (!c) continue;
      // Queued: abandon it so no worker runs it. Running: let it finish, discard the result.
      call_state expected = call_state::queued;
      c->state.compare_exchange_strong(expected, call_state::abandoned, std::memory_order_acq_rel);
      ++stats_.calls_timed_out;
      deliver(c, make_error_code(errc::timed_out));
      ++n;
    }
    return n;
  }

  void deliver(call_base* c, std::error_code ec) noexcept {
    c->delivered = true;
    --pending_;
    ++stats_.calls_completed;
    const std::uint32_t index = static_cast<std::uint32_t>(c->id & 0xffffffffu);
    live_[index] = nullptr;
    free_slots_.push_back(index);
    if (!ec && c->threw) ++stats_.calls_failed;
    c->deliver(ec);
  }

  void destroy(call_base* c) noexcept {
    const std::uint32_t block = c->block_size;
    c->destroy();
    allocator_.free(c, block);
  }

  void stop_workers() noexcept {
    shared_.stopping.store(true, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with each worker's park fence
    for (auto& w : shared_.workers) w->bell.wake_if_parked();  // forced even with doorbell=false
    for (auto& w : shared_.workers) {
      if (w->thread.joinable()) w->thread.join();
    }
    stopped_ = true;
  }

  pool_shared shared_;
  std::thread::id host_;
  call_allocator allocator_;
  std::vector<call_base*> live_;            // id table: index = id & 0xffffffff
  std::vector<std::uint32_t> free_slots_;
  std::uint32_t sequence_ = 0;
  std::deque<call_base*> backlog_;          // accepted, waiting for ring space
  std::priority_queue<deadline_entry, std::vector<deadline_entry>, std::greater<>> deadlines_;
  std::size_t pending_ = 0;                 // accepted, handler not called yet
  std::size_t out_ = 0;                     // records in job rings or held by workers
  std::size_t max_out_ = 0;
  unsigned next_ = 0;
  std::int64_t call_ns_estimate_ = 0;        // running estimate of one call's duration (dispatch rule 2)
  bool accepting_ = true;
  bool draining_ = false;
  bool stopped_ = false;
  pool_stats stats_;
};

}  // namespace detail

pool::pool(pool_options options) : impl_(std::make_unique<detail::pool_impl>(options)) {}
pool::~pool() = default;

std::error_code pool::admit() { return impl_->admit(); }
void* pool::allocate_call(std::size_t size, std::size_t align, std::uint32_t& block) {
  return impl_->allocate(size, align, block);
}
void pool::free_call_memory(void* memory, std::uint32_t block) noexcept { impl_->free_memory(memory, block); }
call_id pool::enqueue(detail::call_base* c, const call_options& options) { return impl_->enqueue(c, options); }
bool pool::cancel(call_id id) { return impl_->cancel(id); }
int pool::completion_fd() const noexcept { return impl_->completion_fd(); }
std::size_t pool::drain() { return impl_->drain(); }
std::size_t pool::poll() { return impl_->drain(false); }
std::size_t pool::pending() const noexcept { return impl_->pending(); }
std::chrono::nanoseconds pool::call_time_estimate() const noexcept { return impl_->call_time_estimate(); }
std::optional<std::chrono::steady_clock::time_point> pool::next_deadline() const { return impl_->next_deadline(); }
void pool::shutdown(shutdown_mode mode) { impl_->shutdown(mode); }
bool pool::accepting() const noexcept { return impl_->accepting(); }
pool_stats pool::stats() const { return impl_->stats(); }
const pool_options& pool::options() const noexcept { return impl_->options(); }
std::string pool::describe() const { return impl_->options().describe(); }

}  // namespace knit
