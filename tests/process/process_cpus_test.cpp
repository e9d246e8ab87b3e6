// A worker process runs with the CPU mask of the thread that built its pool, as a worker
// thread does (src/worker_thread.hpp): not with the mask of the starter thread that spawns
// every child, which keeps the mask of the first thread that needed it (here a host pinned
// to one CPU). The child's mask is read from outside, by its pid.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"
#include "support/pin_thread.hpp"

namespace {

using knit_test::my_cpus;
using knit_test::pin_host;
using knit_test::run_one;

std::vector<int> mask_of(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  EXPECT_EQ(::sched_getaffinity(pid, sizeof set, &set), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// The pid of the child that runs a call on `pool`, asked from this thread. The default
// sandbox (off) keeps a child in the host's PID namespace, so its getpid() is ours to use.
pid_t child_pid(knit::pool& pool) {
  EXPECT_EQ(knit_test::test_process_options().sandbox, knit::process_sandbox::off);
  auto r = run_one(pool, "pid", "");
  EXPECT_TRUE(r.ok());
  return r.ok() ? static_cast<pid_t>(std::stoi(r.value())) : -1;
}

// A pool built and first called from a thread pinned to `cpu`: the starter thread, if this
// is the program's first process call, starts there too. Returns that pool's child's mask.
std::vector<int> first_pool_pinned_to(int cpu) {
  pin_host pinned(cpu);
  EXPECT_TRUE(pinned.ok());
  knit::pool one_cpu(knit_test::threads(1));
  const pid_t pid = child_pid(one_cpu);
  return pid > 0 ? mask_of(pid) : std::vector<int>{};
}

TEST(process_cpus, a_worker_process_takes_its_pools_mask_not_its_starters) {
  knit_test::use_process_options({});
  const std::vector<int> all = my_cpus();
  if (all.size() < 2) GTEST_SKIP() << "needs two CPUs";
  EXPECT_EQ(first_pool_pinned_to(all[0]), std::vector<int>{all[0]});
  // Built on every CPU, called from a host pinned to one: its child gets every CPU.
  knit::pool every_cpu(knit_test::threads(1));
  pin_host pinned(all[0]);
  ASSERT_TRUE(pinned.ok());
  const pid_t pid = child_pid(every_cpu);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(mask_of(pid), all) << "the pool's mask, not the starter's or the host's";
}

TEST(process_cpus, workers_started_ahead_take_their_pools_mask) {
  knit_test::use_process_options({});
  const std::vector<int> all = my_cpus();
  if (all.size() < 2) GTEST_SKIP() << "needs two CPUs";
  ASSERT_FALSE(first_pool_pinned_to(all[0]).empty());  // its child answered
  knit::pool every_cpu(knit_test::threads(1));
  pin_host pinned(all[0]);
  ASSERT_TRUE(pinned.ok());
  knit::process_workers ahead(every_cpu);  // started from the pinned thread
  const pid_t pid = child_pid(every_cpu);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(mask_of(pid), all);
}

}  // namespace
