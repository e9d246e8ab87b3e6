// heavy_share in process mode: each worker process is given the workers' nice by its parent
// (setpriority on the child's pid, before the child's own filter could refuse it), replacements
// included; an explicit process_options::nice wins.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using knit_test::run_one;

int nice_of(int pid) {
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
  EXPECT_EQ(errno, 0);
  return n;
}

int own_nice() {
  errno = 0;
  return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
}

// The pid of the child that runs a call on `pool`.
int child_pid(knit::pool& pool) {
  auto r = run_one(pool, "pid", "");
  EXPECT_TRUE(r.ok());
  return r.ok() ? std::stoi(r.value()) : -1;
}

TEST(heavy_share_process, a_worker_process_gets_the_step_over_its_hosts_nice) {
  knit_test::use_process_options({});
  const int host = own_nice();
  if (host + 10 > 19) GTEST_SKIP() << "the test runs at nice " << host;
  knit::pool_options o = knit_test::threads(1);
  o.heavy_share = 10;
  knit::pool pool(o);
  const int pid = child_pid(pool);
  ASSERT_GT(pid, 0);
  EXPECT_EQ(nice_of(pid), host + 10);
  EXPECT_EQ(own_nice(), host);  // the host keeps its own
}

TEST(heavy_share_process, off_leaves_the_inherited_nice_and_an_explicit_nice_wins) {
  knit_test::use_process_options({});
  const int host = own_nice();
  if (host > 3) GTEST_SKIP() << "the test runs at nice " << host;
  {
    knit::pool pool(knit_test::threads(1));
    EXPECT_EQ(nice_of(child_pid(pool)), host);
  }
  knit::pool_options o = knit_test::threads(1);
  o.heavy_share = 10;
  o.process.nice = 3;
  knit::pool pool(o);
  EXPECT_EQ(nice_of(child_pid(pool)), 3);
}

}  // namespace
