// The public face of the process workers (knit/process.hpp): options, counters,
// process_error, and run_process_task with its thread_local channel (created lazily the
// first time a thread runs a process task; destroyed, its child killed and reaped, when
// that thread exits, as a pool's workers do at shutdown).
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "invariant.hpp"
#include "knit/process.hpp"
#include "process/channel.hpp"
#include "process/counters.hpp"
#include "process/standby.hpp"
#include "process/starter.hpp"
#include "process/task_registry.hpp"

namespace knit {
namespace {

std::mutex options_mutex;
process_options& stored_options() {
  static process_options options;
  return options;
}
std::atomic<unsigned> next_worker_number{1};

// The workers process_workers started that no worker thread has taken yet, each tagged with
// its batch (the process_workers that owns it until taken).
struct standby_worker {
  std::uint64_t batch;
  std::shared_ptr<detail::worker_box> box;
};
std::mutex standby_mutex;
// The batches whose process_workers is alive (under standby_mutex): a box given back after
// its process_workers ended has no one to end it in the list, so it is ended instead.
std::set<std::uint64_t>& live_batches() {
  static std::set<std::uint64_t> batches;
  return batches;
}
std::deque<standby_worker>& standby() {
  static std::deque<standby_worker> workers;
  return workers;
}
std::atomic<std::uint64_t> next_batch{1};

}  // namespace

namespace detail {

std::shared_ptr<worker_box> claim_worker() {
  {
    std::lock_guard lock(standby_mutex);
    if (!standby().empty()) {
      std::shared_ptr<worker_box> box = std::move(standby().front().box);
      standby().pop_front();
      return box;
    }
  }
  return std::make_shared<worker_box>(next_worker_number.fetch_add(1, std::memory_order_relaxed),
                                      current_process_options());
}

void return_worker(std::shared_ptr<worker_box> box, std::uint64_t killed_id) {
  KNIT_ASSERT(box && box->batch() != 0);
  {
    std::lock_guard lock(standby_mutex);
    if (live_batches().contains(box->batch())) {
      box->replace(killed_id, /*crash=*/false);  // a kill is no crash
      standby().push_back({box->batch(), std::move(box)});
      return;
    }
  }
  box->abandon();  // its process_workers has ended: no replacement, nothing left running
}

}  // namespace detail

process_workers::process_workers(unsigned count)
    : batch_(next_batch.fetch_add(1, std::memory_order_relaxed)), count_(count) {
  if (count == 0 || count > 1024) {
    throw config_error("knit::process_workers: count must be 1 .. 1024, not " +
                       std::to_string(count));
  }
  detail::task_registry::instance().freeze();
  const process_options options = current_process_options();
  std::vector<std::shared_ptr<detail::worker_box>> boxes;
  for (unsigned i = 0; i < count; ++i) {
    boxes.push_back(std::make_shared<detail::worker_box>(
        next_worker_number.fetch_add(1, std::memory_order_relaxed), options, batch_));
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
  live_batches().insert(batch_);
  for (auto& box : boxes) standby().push_back({batch_, std::move(box)});
}

process_workers::~process_workers() {
  std::vector<std::shared_ptr<detail::worker_box>> mine;
  {
    std::lock_guard lock(standby_mutex);
    live_batches().erase(batch_);
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
  if (spin.count() < 0 || spin.count() > 1'000'000) bad("spin must be 0 .. 1 s");
  if (lanes < 1 || lanes > detail::region_max_lanes) {
    bad("lanes must be 1 .. " + std::to_string(detail::region_max_lanes) + ", not " +
        std::to_string(lanes));
  }
  if (open_files < 8 || open_files > 65536) {
    bad("open_files must be 8 .. 65536, not " + std::to_string(open_files));
  }
  if (sandbox != process_sandbox::off && sandbox != process_sandbox::strict) bad("bad sandbox");
}

void set_process_options(const process_options& options) {
  options.validate();
  std::lock_guard lock(options_mutex);
  stored_options() = options;
}

process_options current_process_options() {
  std::lock_guard lock(options_mutex);
  return stored_options();
}

process_stats current_process_stats() noexcept {
  const detail::process_counters& c = detail::counters();
  process_stats s;
  s.children_started = c.children_started.load(std::memory_order_relaxed);
  s.children_live = c.children_live.load(std::memory_order_relaxed);
  s.crashes = c.crashes.load(std::memory_order_relaxed);
  s.degraded_workers = c.degraded_workers.load(std::memory_order_relaxed);
  s.calls = c.calls.load(std::memory_order_relaxed);
  s.calls_withdrawn = c.calls_withdrawn.load(std::memory_order_relaxed);
  s.killed = c.killed.load(std::memory_order_relaxed);
  s.respawned = c.respawned.load(std::memory_order_relaxed);
  s.sandbox_kills = c.sandbox_kills.load(std::memory_order_relaxed);
  s.memory_limit_kills = c.memory_limit_kills.load(std::memory_order_relaxed);
  return s;
}

std::string run_process_task(std::string_view name, std::string_view bytes,
                             const process_call_limits& limits) {
  detail::task_registry& registry = detail::task_registry::instance();
  registry.freeze();
  const auto index = registry.find(name);
  if (!index) {
    throw std::invalid_argument("knit::run_process_task: no process task named '" +
                                std::string(name) + "'");
  }
  thread_local std::unique_ptr<detail::process_channel> channel;
  if (!channel) channel = std::make_unique<detail::process_channel>(detail::claim_worker());
  return channel->call(*index, name, bytes, limits);
}

}  // namespace knit
