// heavy_share: the share -> nice policy as a table of cases, the option and its variable, a
// worker applying the step on top of the nice it inherits (and an explicit worker_nice
// winning), and the loop's custom slice as the kernel reports it (or a named refusal).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "heavy_share.hpp"
#include "knit/loop_slice.hpp"
#include "knit/pool.hpp"
#include "support/pool_helpers.hpp"

namespace {

using knit::detail::nice_for_share;
using knit::detail::share_of_nice;
using knit_test::drain_until;

TEST(heavy_share_policy, share_to_nice_table) {
  struct row {
    unsigned share;
    unsigned loops;
    int nice;
  };
  // Against one loop at nice 0: weight w keeps w / (w + 1024) (335 -> 24.7 %, 110 -> 9.7 %).
  const row rows[] = {
      {0, 1, 0},    // off
      {100, 1, 0},  // off
      {50, 1, 0},   // an equal split is nice 0
      {75, 1, 0},   // more than half would need a negative nice: nice 0 is nearest
      {40, 1, 2},   // 655 / 1679 = 39.0 %
      {25, 1, 5},   // 335 / 1359 = 24.7 %
      {20, 1, 6},   // 272 / 1296 = 21.0 %
      {10, 1, 10},  // 110 / 1134 = 9.7 %
      {5, 1, 13},   // 56 / 1080 = 5.2 %
      {1, 1, 19},   // 15 / 1039 = 1.4 %: the most nice can give up
      {25, 2, 2},   // two loops on the CPU: 655 / 2703 = 24.2 %
      {10, 0, 0},   // no loop: nothing to yield to
  };
  for (const row& r : rows) {
    EXPECT_EQ(nice_for_share(r.share, r.loops), r.nice)
        << "share " << r.share << "% against " << r.loops << " loop(s)";
  }
  EXPECT_NEAR(share_of_nice(5, 1), 24.65, 0.01);
  EXPECT_NEAR(share_of_nice(0, 1), 50.0, 1e-9);
}

TEST(heavy_share_policy, explicit_worker_nice_wins_and_the_step_adds_to_the_inherited_nice) {
  knit::pool_options o;
  o.heavy_share = 25;
  EXPECT_EQ(knit::detail::worker_nice_for(o, 0), 5);
  EXPECT_EQ(knit::detail::worker_nice_for(o, 3), 8);    // a program run at nice 3
  EXPECT_EQ(knit::detail::worker_nice_for(o, 17), 19);  // capped at 19
  o.worker_nice = 2;
  EXPECT_EQ(knit::detail::worker_nice_for(o, 0), 2);
  o.worker_nice = 0;
  o.heavy_share = 0;
  EXPECT_EQ(knit::detail::worker_nice_for(o, 4), 4);  // off: inherited
}

TEST(heavy_share_option, default_off_range_and_variable) {
  EXPECT_EQ(knit::pool_options{}.heavy_share, 0u);
  knit::pool_options o;
  o.heavy_share = 101;
  EXPECT_THROW(o.validate(), knit::config_error);
  ::setenv("KNIT_HEAVY_SHARE", "10", 1);
  EXPECT_EQ(knit::pool_options::from_env().heavy_share, 10u);
  ::setenv("KNIT_HEAVY_SHARE", "200", 1);
  EXPECT_THROW(knit::pool_options::from_env(), knit::config_error);
  ::unsetenv("KNIT_HEAVY_SHARE");
  o.heavy_share = 25;
  EXPECT_NE(o.describe().find("heavy_share=25%(workers nice +5)"), std::string::npos)
      << o.describe();
}

// The nice of the worker that runs a call, read on that worker (Linux keeps nice per thread).
int nice_on_a_worker(knit::pool& p) {
  int seen = -100;
  bool done = false;
  EXPECT_FALSE(p.submit(
      [](int) {
        errno = 0;
        return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
      },
      0,
      [&](knit::result<int> r) {
        EXPECT_TRUE(r.ok());
        if (r.ok()) seen = r.value();
        done = true;
      }));
  EXPECT_TRUE(drain_until(p, [&] { return done; }));
  return seen;
}

// Runs `body` on a fresh thread, so the nice it inherits is this test's, not a raised one.
template <class F>
void on_own_thread(F body) {
  std::thread t(body);
  t.join();
}

TEST(heavy_share_worker, a_worker_applies_the_step_over_the_host_nice_and_the_host_keeps_its) {
  on_own_thread([] {
    const int host = knit::detail::current_thread_nice();
    if (host + 10 > 19) GTEST_SKIP() << "the test runs at nice " << host;
    knit::pool_options o;
    o.heavy_share = 10;
    knit::pool p(o);
    EXPECT_EQ(nice_on_a_worker(p), host + 10);
    EXPECT_EQ(knit::detail::current_thread_nice(), host);
  });
}

TEST(heavy_share_worker, an_explicit_worker_nice_wins) {
  on_own_thread([] {
    const int host = knit::detail::current_thread_nice();
    if (host > 3) GTEST_SKIP() << "the test runs at nice " << host;
    knit::pool_options o;
    o.heavy_share = 10;
    o.worker_nice = 3;
    knit::pool p(o);
    EXPECT_EQ(nice_on_a_worker(p), 3);
  });
}

TEST(heavy_share_worker, off_leaves_the_inherited_nice) {
  on_own_thread([] {
    const int host = knit::detail::current_thread_nice();
    knit::pool_options o;
    o.heavy_share = 100;
    knit::pool p(o);
    EXPECT_EQ(nice_on_a_worker(p), host);
  });
}

// Whether the running kernel keeps custom slices for SCHED_OTHER (6.12 and later).
bool kernel_keeps_custom_slices() {
  utsname u{};
  if (::uname(&u) != 0) return false;
  int major = 0;
  int minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 12);
}

TEST(loop_slice, the_kernel_reports_the_slice_asked_for_or_the_refusal_is_named) {
  on_own_thread([] {
    const knit::loop_slice_status before = knit::loop_slice_now();
    const int nice_before = knit::detail::current_thread_nice();
    const int error = knit::request_loop_slice(std::chrono::microseconds(300));
    // No seccomp filter here: a kernel that keeps custom slices must take it.
    if (kernel_keeps_custom_slices()) {
      EXPECT_EQ(error, 0);
    }
    const knit::loop_slice_status after = knit::loop_slice_now();
    EXPECT_EQ(knit::detail::current_thread_nice(), nice_before);  // the nice is kept
    EXPECT_EQ(after.slice, std::chrono::microseconds(300));
    if (error == 0) {
      EXPECT_EQ(knit::current_loop_slice(), std::chrono::microseconds(300));
      EXPECT_EQ(after.applied, before.applied + 1);
    } else {
      // A kernel before 6.12 keeps no custom slice (ENOTSUP); a filter refuses (ENOSYS, EPERM).
      EXPECT_TRUE(error == ENOTSUP || error == ENOSYS || error == EPERM || error == EINVAL)
          << error;
      EXPECT_EQ(after.refused, before.refused + 1);
      EXPECT_NE(after.first_error, 0);
    }
    // Below the kernel's floor the slice is clamped to 100 us, and that still counts.
    if (error == 0) {
      EXPECT_EQ(knit::request_loop_slice(std::chrono::microseconds(20)), 0);
      EXPECT_EQ(knit::current_loop_slice(), std::chrono::microseconds(100));
    }
  });
}

// A thread inherits its creator's custom slice: a worker a loop thread starts (a lent or
// replacement one) would get the loop's short slice and preempt it. Workers put the default
// slice back once the process has asked for a loop slice.
TEST(loop_slice, a_worker_started_from_a_loop_thread_keeps_the_default_slice) {
  if (!kernel_keeps_custom_slices()) GTEST_SKIP() << "kernel before 6.12 keeps no custom slice";
  on_own_thread([] {
    const auto default_slice = knit::current_loop_slice();
    ASSERT_EQ(knit::request_loop_slice(std::chrono::microseconds(200)), 0);
    ASSERT_NE(default_slice, std::chrono::microseconds(200));
    knit::pool_options o;
    o.threads = 1;
    knit::pool p(o);  // its worker is started by this thread, which has the short slice
    std::chrono::microseconds seen{0};
    ASSERT_FALSE(
        p.submit([](int) { return knit::current_loop_slice().count(); }, 0,
                 [&](knit::result<long> r) { seen = std::chrono::microseconds(r.value()); }));
    p.shutdown(knit::shutdown_mode::drain);
    EXPECT_EQ(seen, default_slice);
    EXPECT_EQ(knit::current_loop_slice(), std::chrono::microseconds(200));  // the loop keeps its
  });
}

}  // namespace
