// worker_thread: a pool thread that starts on the CPUs it is to run on.
//
// Why not std::thread and a pthread_setaffinity_np() as its first step: a new thread
// inherits the creating thread's CPU mask, and it must run once inside that mask before it
// can move itself. The thread that creates a worker is often an event loop pinned to its
// own CPU and busy there (a pool built at a loop's start, a lent worker or a replacement
// started from a host's drain), so the new thread waited for the loop to be preempted
// before its first instruction: 2.9-4.0 ms each on a 2-vCPU guest, against 57-80 us when
// the mask is given to pthread_create. And a worker with no CPU of its own inherited the
// mask of whichever thread started it: a lent worker started from a loop pinned to one CPU
// ran on that CPU only, beside the loop it was lent to relieve.
//
// So every worker thread is created with its mask as a pthread attribute (applied by the
// C library before the thread runs any of its code): its pinned CPU (pool_options::
// worker_cpus), or else the mask of the thread that built the pool, the same for the
// first workers, their replacements and the lent ones.
//
// Ownership is std::thread's: join() or detach() once; destroying a joinable one
// terminates.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <functional>
#include <optional>

#include "knit/options.hpp"

namespace knit::detail {

// The CPUs a pool may give a worker that has none of its own: the building thread's mask.
cpu_set_t building_thread_cpus() noexcept;

// The policy: worker `self`'s CPU set. Pinned (worker_cpus[self % size]) when the pool
// pins, else `unpinned`. Lent workers count on from the seats (self >= threads), as
// worker_cpus says.
cpu_set_t worker_cpu_set(const pool_options& options, unsigned self, const cpu_set_t& unpinned);

class worker_thread {
 public:
  worker_thread() noexcept = default;
  // Starts body() on a new thread confined to `cpus` from its start. If the C library
  // refuses the mask (EINVAL: none of those CPUs is allowed here, a cpuset), the thread
  // starts with the creator's mask instead and `refused_cpus` says so; any other failure
  // throws std::system_error, as std::thread does.
  worker_thread(const cpu_set_t& cpus, std::function<void()> body, bool& refused_cpus);
  worker_thread(worker_thread&& other) noexcept;
  worker_thread& operator=(worker_thread&& other) noexcept;
  worker_thread(const worker_thread&) = delete;
  worker_thread& operator=(const worker_thread&) = delete;
  ~worker_thread();

  bool joinable() const noexcept { return handle_.has_value(); }
  void join();
  void detach();

 private:
  std::optional<pthread_t> handle_;  // set while joinable
};

}  // namespace knit::detail
