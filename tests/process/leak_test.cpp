// 100 crash-and-respawn cycles leave nothing behind: the fd count where it started, no
// zombie child, and no memfd mapping beyond the live children's.
#include <gtest/gtest.h>

#include <string>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

TEST(process_leak_test, hundred_crash_cycles_leak_no_fd_zombie_or_mapping) {
  knit::process_options options;
  options.crash_loop_crashes = 1000;  // the loop is on purpose: no backoff here
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  // The baseline with the worker thread's child started (its fds and mapping counted in).
  ASSERT_TRUE(knit_test::run_one(pool, "echo", "warm").ok());
  const std::size_t fds = knit_test::open_fd_count();
  ASSERT_EQ(knit_test::memfd_mappings(), 1u);
  const auto crashes_before = knit::current_process_stats().crashes;
  const char* kinds[] = {"segv", "abort", "exit3", "scribble_answer"};
  for (int i = 0; i < 100; ++i) {
    const char* kind = kinds[i % 4];
    auto crash =
        knit_test::run_one(pool, kind, kind == std::string("scribble_answer") ? "status" : "");
    ASSERT_EQ(crash.error(), knit::errc::worker_crashed) << i << ": " << kind;
    auto good = knit_test::run_one(pool, "echo", std::to_string(i));
    ASSERT_TRUE(good.ok()) << i << ": " << knit::failure_message(good);
    ASSERT_EQ(good.value(), std::to_string(i));
  }
  EXPECT_EQ(knit::current_process_stats().crashes - crashes_before, 100u);
  EXPECT_EQ(knit_test::open_fd_count(), fds);
  EXPECT_EQ(knit_test::memfd_mappings(), knit::current_process_stats().children_live);
  EXPECT_EQ(knit::current_process_stats().children_live, 1u);
  const auto children = knit_test::children_of_this_process();
  ASSERT_EQ(children.size(), 1u);  // the live child, nothing else
  EXPECT_NE(children[0].state, 'Z');
}

}  // namespace
