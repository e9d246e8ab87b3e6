// Degraded ends by itself: a worker crash-looped by K crashes reports degraded_workers
// (and knit-server's /readyz "degraded: workers crash-looping", which reads that count), and
// once its crash-loop window passes with no new crash the count returns, with no call made
// meanwhile: with the spare child off and on, and for crashes during calls and kills of an
// idle child. Before, only a crash or a call re-evaluated it: an idle worker stayed degraded.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::run_one;
using knit_test::within_10s;

// K = 2 within 1 s: two crashes in a row land in it even on a loaded machine, and the count
// has long been read before the window ends.
constexpr unsigned kCrashes = 2;
constexpr auto kWindow = 1000ms;

class crash_loop_clear_test : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    saved_ = knit_test::test_process_options();
    knit::process_options options;
    options.crash_loop_crashes = kCrashes;
    options.crash_loop_window = kWindow;
    options.backoff_initial = 50ms;
    options.backoff_max = 50ms;
    options.spare_child = GetParam();
    knit_test::use_process_options(options);
    base_ = knit::current_process_stats().degraded_workers;
  }
  void TearDown() override { knit_test::use_process_options(saved_); }

  std::uint64_t degraded() const { return knit::current_process_stats().degraded_workers - base_; }

  // With no call made: degraded now, and not any more within 10 s.
  void expect_degraded_then_clear() {
    EXPECT_GE(degraded(), 1u) << "the worker is in a crash loop";
    EXPECT_TRUE(within_10s([&] { return degraded() == 0; }))
        << "still degraded 10 s after its last crash, with a " << kWindow.count()
        << " ms crash-loop window";
  }

  knit::process_options saved_;
  std::uint64_t base_ = 0;
};

TEST_P(crash_loop_clear_test, crashes_during_calls_then_no_traffic) {
  knit::pool pool(knit_test::threads(1));
  std::string last;
  for (unsigned i = 0; i < kCrashes; ++i) {
    auto r = run_one(pool, "abort", "");
    ASSERT_EQ(r.error(), knit::errc::worker_crashed) << knit::failure_message(r);
    last = knit::failure_message(r);
  }
  EXPECT_NE(last.find("crash loop: respawns back off"), std::string::npos) << last;
  expect_degraded_then_clear();
  // The worker serves again, and stays clear.
  auto good = run_one(pool, "echo", "after");
  ASSERT_TRUE(good.ok()) << knit::failure_message(good);
  EXPECT_EQ(degraded(), 0u);
}

TEST_P(crash_loop_clear_test, kills_of_an_idle_child_then_no_traffic) {
  knit::pool pool(knit_test::threads(1));
  for (unsigned i = 0; i < kCrashes; ++i) {
    auto pid = run_one(pool, "pid", "");
    ASSERT_TRUE(pid.ok()) << knit::failure_message(pid);
    const std::uint64_t crashes = knit::current_process_stats().crashes;
    ASSERT_EQ(::kill(std::stoi(pid.value()), SIGKILL), 0);
    // Seen and counted by the starter (an idle death: no call reports it).
    ASSERT_TRUE(within_10s([&] { return knit::current_process_stats().crashes > crashes; }));
  }
  ASSERT_TRUE(within_10s([&] { return degraded() >= 1; })) << "K idle deaths: degraded";
  expect_degraded_then_clear();
}

INSTANTIATE_TEST_SUITE_P(spare, crash_loop_clear_test, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "spare_on" : "spare_off");
                         });

}  // namespace
