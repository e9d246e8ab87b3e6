// start_child (starter.hpp): one child spawned and handshaken, with the failure named: the
// registry compared, the handshake bounded, the child counted live.
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "heavy_share.hpp"
#include "process/counters.hpp"
#include "process/slot_bell.hpp"
#include "process/spawn.hpp"
#include "process/starter.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {
namespace {

using steady = std::chrono::steady_clock;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

child_process start_child(unsigned number, const process_options& options, const cpu_set_t& cpus) {
  // A child inherits the mask of the thread that spawns it: this one, the starter, which
  // the first thread to need it started, maybe a loop pinned to its CPU. It takes the
  // pool's before each spawn. Refused (a cpuset without those CPUs now): the child keeps
  // the starter's, as a worker thread keeps its starter's (worker_thread.hpp).
  (void)::pthread_setaffinity_np(::pthread_self(), sizeof cpus, &cpus);
  task_registry& registry = task_registry::instance();
  registry.freeze();
  region_sandbox sandbox;
  sandbox.strict = options.sandbox == process_sandbox::strict ? 1 : 0;
  sandbox.open_files = options.open_files;
  sandbox.memory_limit = options.memory_limit;
  child_process c =
      spawn_child(options.worker_executable, number, options.arena_bytes, options.lanes,
                  static_cast<std::uint64_t>(options.spin.count()), sandbox);
  const std::string who = "knit: process worker knit-proc-" + std::to_string(number) + " (pid " +
                          std::to_string(c.pid) + ", " + options.worker_executable + ")";
  // Raising a same-user child's nice needs no privilege; only a child already gone can
  // refuse (ESRCH), which the handshake below reports.
  apply_child_nice(c.pid, options.nice);
  region_header& header = c.region.header();
  const bell_end end =
      wait_for_ring([&] { return load(header.ready, std::memory_order_acquire) != 0; },
                    header.host_sleeping, c.answer.get(), c.pidfd.get(),
                    steady::now() + options.start_timeout, std::chrono::nanoseconds(0));
  std::string failure;
  if (end == bell_end::other_fd) {
    // SIGKILL to a dead child is harmless, and keeps the reap bounded should poll have
    // reported an error rather than the death.
    failure = who + ": the worker " + end_child(c, true) + " before its handshake";
    if (failure.ends_with("exited with code " + std::to_string(exit_no_worker_main) +
                          " before its handshake")) {
      failure +=
          " (its program does not call knit::worker_main first in main, after "
          "registering the process tasks: a worker process must never reach the code "
          "that starts worker processes)";
    }
  } else if (end == bell_end::timeout) {
    failure = who + ": the worker did not finish its handshake within " +
              std::to_string(options.start_timeout.count()) + " ms; killed";
    end_child(c, true);
  } else {
    const std::uint32_t ready = load(header.ready, std::memory_order_acquire);
    const std::uint32_t count = load(header.registry_count);
    const std::uint64_t hash = load(header.registry_hash);
    if (ready != 1 || count != registry.count() || hash != registry.hash()) {
      failure = who + ": task registry mismatch: the host has " + std::to_string(registry.count()) +
                " tasks (hash " + hex(registry.hash()) + "), the worker has " +
                std::to_string(count) + " (hash " + hex(hash) +
                "); both must register the same tasks in the same order";
      end_child(c, true);
    }
  }
  if (!failure.empty()) throw process_error(errc::worker_start_failed, failure);
  {
    std::lock_guard lock(c.end->mutex);  // reap() uncounts it under the same lock
    c.end->live_counted = true;
    counters().children_live.fetch_add(1, std::memory_order_relaxed);
  }
  return c;
}

}  // namespace knit::detail
