// The public face of the process workers (knit/process.hpp): the options' check, the
// counters, process_error, and process_workers with its standby list (standby.hpp).
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "heavy_share.hpp"
#include "invariant.hpp"
#include "knit/process.hpp"
#include "pool_impl.hpp"
#include "process/counters.hpp"
#include "process/spawn.hpp"
#include "process/standby.hpp"
#include "process/starter.hpp"
#include "process/task_registry.hpp"

namespace knit {
namespace {

std::atomic<unsigned> next_worker_number{1};

// The workers a process_workers started that no host's ring has taken yet, each tagged
// with its pool (only that pool's rings take it: its options are that pool's) and its batch
// (the process_workers that ends it if no ring took it).
struct standby_worker {
  const void* pool_key;
  std::uint64_t batch;
  std::shared_ptr<detail::worker_box> box;
};
std::mutex standby_mutex;
std::deque<standby_worker>& standby() {
  static std::deque<standby_worker> workers;
  return workers;
}
std::atomic<std::uint64_t> next_batch{1};

}  // namespace

namespace detail {

std::shared_ptr<worker_box> claim_worker(const void* pool_key, const process_options& options,
                                         const cpu_set_t& cpus) {
  {
    std::lock_guard lock(standby_mutex);
    for (auto it = standby().begin(); it != standby().end(); ++it) {
      if (it->pool_key != pool_key) continue;
      std::shared_ptr<worker_box> box = std::move(it->box);
      standby().erase(it);
      return box;
    }
  }
  return std::make_shared<worker_box>(next_worker_number.fetch_add(1, std::memory_order_relaxed),
                                      options, cpus);
}

}  // namespace detail

process_workers::process_workers(const pool& pool)
    : batch_(next_batch.fetch_add(1, std::memory_order_relaxed)), count_(pool.options().threads) {
  detail::task_registry::instance().freeze();
  const process_options options = detail::process_options_of(pool.options());
  std::vector<std::shared_ptr<detail::worker_box>> boxes;
  for (unsigned i = 0; i < count_; ++i) {
    boxes.push_back(std::make_shared<detail::worker_box>(
        next_worker_number.fetch_add(1, std::memory_order_relaxed), options,
        pool.impl_->unpinned_cpus(), batch_));
    boxes.back()->want_child();
  }
  std::optional<std::string> failure;
  for (auto& box : boxes) {
    box->wait_started();
    if (!failure) failure = box->start_failure();
  }
  if (failure) {
    for (auto& box : boxes) box->abandon();
    throw process_error(errc::worker_start_failed, *failure);
  }
  std::lock_guard lock(standby_mutex);
  for (auto& box : boxes) standby().push_back({&pool.options(), batch_, std::move(box)});
}

process_workers::~process_workers() {
  std::vector<std::shared_ptr<detail::worker_box>> mine;
  {
    std::lock_guard lock(standby_mutex);
    for (auto it = standby().begin(); it != standby().end();) {
      if (it->batch == batch_) {
        mine.push_back(std::move(it->box));
        it = standby().erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& box : mine) box->abandon();
}

namespace detail {
process_counters& counters() noexcept {
  static process_counters c;
  return c;
}
}  // namespace detail

process_error::process_error(errc code, const std::string& what)
    : std::system_error(make_error_code(code), what) {}

void process_options::validate() const {
  auto bad = [](const std::string& what) { throw config_error("knit::process_options: " + what); };
  if (arena_bytes == 0 || arena_bytes > (std::size_t{1} << 30)) {
    bad("arena_bytes must be 1 .. 1 GiB, not " + std::to_string(arena_bytes));
  }
  if (crash_loop_crashes == 0 || crash_loop_crashes > 1000) {
    bad("crash_loop_crashes must be 1 .. 1000, not " + std::to_string(crash_loop_crashes));
  }
  if (crash_loop_window.count() <= 0) bad("crash_loop_window must be positive");
  if (backoff_initial.count() < 0 || backoff_max < backoff_initial) {
    bad("backoff_initial must be >= 0 and <= backoff_max");
  }
  if (start_timeout.count() <= 0 || start_timeout.count() > 600'000) {
    bad("start_timeout must be 1 ms .. 600 s");
  }
  if (worker_executable.empty()) bad("worker_executable is empty");
  if (begin_timeout.count() <= 0 || begin_timeout.count() > 600'000) {
    bad("begin_timeout must be 1 ms .. 600 s");
  }
  if (spin.count() < 0 || spin.count() > 1'000'000) bad("spin must be 0 .. 1 s");
  if (lanes < 1 || lanes > detail::region_max_lanes) {
    bad("lanes must be 1 .. " + std::to_string(detail::region_max_lanes) + ", not " +
        std::to_string(lanes));
  }
  if (nice < 0 || nice > 19) bad("nice must be 0 .. 19, not " + std::to_string(nice));
  if (open_files < 8 || open_files > 65536) {
    bad("open_files must be 8 .. 65536, not " + std::to_string(open_files));
  }
  if (sandbox != process_sandbox::off && sandbox != process_sandbox::strict) bad("bad sandbox");
}

process_confinement current_process_confinement() { return detail::current_confinement(); }

process_stats current_process_stats() noexcept {
  const detail::process_counters& c = detail::counters();
  process_stats s;
  s.children_started = c.children_started.load(std::memory_order_relaxed);
  s.children_live = c.children_live.load(std::memory_order_relaxed);
  s.crashes = c.crashes.load(std::memory_order_relaxed);
  s.degraded_workers = c.degraded_workers.load(std::memory_order_relaxed);
  s.calls = c.calls.load(std::memory_order_relaxed);
  s.calls_withdrawn = c.calls_withdrawn.load(std::memory_order_relaxed);
  s.calls_resent = c.calls_resent.load(std::memory_order_relaxed);
  s.calls_moved = c.calls_moved.load(std::memory_order_relaxed);
  s.protocol_kills = c.protocol_kills.load(std::memory_order_relaxed);
  s.killed = c.killed.load(std::memory_order_relaxed);
  s.respawned = c.respawned.load(std::memory_order_relaxed);
  s.sandbox_kills = c.sandbox_kills.load(std::memory_order_relaxed);
  s.memory_limit_kills = c.memory_limit_kills.load(std::memory_order_relaxed);
  return s;
}

}  // namespace knit
