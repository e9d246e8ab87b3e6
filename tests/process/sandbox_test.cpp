// The worker sandbox (process_options::sandbox = strict, memory_limit): a task that makes a
// socket and connects, execs /bin/sh, forks, opens a file for writing, or allocates four
// times the memory limit fails its own call with a message naming what it did; a good call
// before and after it and 100 good calls beside it succeed; its child is replaced; nothing
// is left behind. Without the sandbox the same tasks run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::process_call;
using knit_test::run_calls;
using knit_test::run_one;

constexpr std::size_t kMemoryLimit = std::size_t{64} << 20;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// A sanitizer's operator new reports a failed allocation and dies instead of throwing
// std::bad_alloc: the over-limit task then ends as a crash.
constexpr bool kBadAllocThrows = false;
#else
constexpr bool kBadAllocThrows = true;
#endif

knit::process_options sandboxed() {
  knit::process_options options;
  options.sandbox = knit::process_sandbox::strict;
  options.memory_limit = kMemoryLimit;
  options.crash_loop_crashes = 100;  // one bad call each: no backoff involved
  return options;
}

struct bad_case {
  const char* task;
  const char* bytes;
  const char* named;  // what the message must name
};

void PrintTo(const bad_case& c, std::ostream* os) { *os << c.task; }

class sandbox_test : public testing::TestWithParam<bad_case> {
 protected:
  void SetUp() override {
    knit_test::use_process_options(sandboxed());
    base_ = knit::current_process_stats();
  }
  knit::process_stats base_;
};

TEST_P(sandbox_test, a_refused_call_fails_alone_and_its_worker_is_replaced) {
  const bad_case& c = GetParam();
  knit::pool pool(knit_test::threads(2));
  knit::process_workers workers(pool);
  ASSERT_TRUE(run_one(pool, "echo", "before").ok());
  const std::size_t fds = knit_test::open_fd_count();
  std::vector<process_call> calls;
  calls.push_back({"echo", "first", std::nullopt});
  for (int i = 0; i < 100; ++i) {
    if (i == 30) calls.push_back({c.task, c.bytes, std::nullopt});
    calls.push_back({"echo", "payload " + std::to_string(i), std::nullopt});
  }
  ASSERT_TRUE(run_calls(pool, calls));
  for (process_call& call : calls) {
    ASSERT_TRUE(call.result.has_value());
    if (call.task == "echo") {
      ASSERT_TRUE(call.result->ok()) << knit::failure_message(*call.result);
      EXPECT_EQ(call.result->value(), call.bytes);
      continue;
    }
    ASSERT_FALSE(call.result->ok()) << call.result->value();
    const std::string message = knit::failure_message(*call.result);
    const bool crashed_instead = !kBadAllocThrows && std::string(c.task) == "allocate";
    if (!crashed_instead) {
      EXPECT_NE(message.find(c.named), std::string::npos) << message;
    }
    EXPECT_NE(message.find(std::string("'") + c.task + "'"), std::string::npos) << message;
    if (std::string(c.task) == "allocate") {
      if (kBadAllocThrows) {
        EXPECT_EQ(call.result->error(), knit::errc::memory_limit) << message;
      } else {
        EXPECT_TRUE(call.result->error() == knit::errc::memory_limit ||
                    call.result->error() == knit::errc::worker_crashed)
            << message;
      }
    } else {
      EXPECT_EQ(call.result->error(), knit::errc::sandbox_violation) << message;
    }
  }
  ASSERT_TRUE(run_one(pool, "echo", "after").ok());
  const knit::process_stats now = knit::current_process_stats();
  if (std::string(c.task) == "allocate") {
    if (kBadAllocThrows) {
      EXPECT_EQ(now.memory_limit_kills - base_.memory_limit_kills, 1u);
    }
  } else {
    EXPECT_EQ(now.sandbox_kills - base_.sandbox_kills, 1u);
    EXPECT_EQ(now.crashes - base_.crashes, 0u) << "a sandbox kill is not a crash";
  }
  // Nothing left behind: both children live (no zombie), the host's fds and mappings as
  // before (the replacement has taken the place of the one that was ended).
  const auto limit = std::chrono::steady_clock::now() + 10s;
  auto settled = [&] {
    const auto kids = knit_test::children_of_this_process();
    std::size_t live = 0;
    for (const auto& k : kids) live += k.state != 'Z';
    return kids.size() == 2 && live == 2 && knit_test::open_fd_count() == fds &&
           knit::current_process_stats().children_started - base_.children_started == 3;
  };
  while (!settled() && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(2ms);
  EXPECT_TRUE(settled());
  EXPECT_EQ(knit::current_process_stats().children_started - base_.children_started, 3u)
      << "two ahead, one replacement";
  EXPECT_EQ(knit_test::open_fd_count(), fds);
  EXPECT_EQ(knit_test::memfd_mappings(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    each_refusal, sandbox_test,
    testing::Values(bad_case{"connect", "", "(socket)"}, bad_case{"exec_sh", "", "(execve)"},
                    bad_case{"fork", "", "(clone)"}, bad_case{"open_write", "", "(openat)"},
                    bad_case{"allocate", "268435456", "memory limit"}),
    [](const testing::TestParamInfo<bad_case>& info) { return std::string(info.param.task); });

// What the sandbox lets a task do: threads, a read-only open, sleeping, memory under the
// limit, throwing; and without it, the refused tasks run.
TEST(sandbox_allows, threads_reads_sleeps_memory_and_exceptions) {
  knit_test::use_process_options(sandboxed());
  const std::uint64_t started = knit::current_process_stats().children_started;
  knit::pool pool(knit_test::threads(1));
  auto thread = run_one(pool, "thread", "");
  ASSERT_TRUE(thread.ok()) << knit::failure_message(thread);
  EXPECT_EQ(thread.value(), "joined");
  auto read = run_one(pool, "open_read", "");
  ASSERT_TRUE(read.ok()) << knit::failure_message(read);
  EXPECT_EQ(read.value(), "read");
  EXPECT_TRUE(run_one(pool, "sleep_pid", "5").ok());
  const auto memory = run_one(pool, "allocate", std::to_string(kMemoryLimit / 4));
  ASSERT_TRUE(memory.ok()) << knit::failure_message(memory);
  const auto threw = run_one(pool, "throw", "");
  EXPECT_EQ(threw.error(), knit::errc::task_failed);
  EXPECT_EQ(knit::current_process_stats().children_started - started, 1u) << "one child did it all";
}

TEST(sandbox_allows, everything_when_off) {
  knit_test::use_process_options({});
  knit::pool pool(knit_test::threads(1));
  auto connect = run_one(pool, "connect", "");
  ASSERT_TRUE(connect.ok()) << knit::failure_message(connect);
  EXPECT_EQ(connect.value().rfind("connect: ", 0), 0u) << connect.value();
  auto forked = run_one(pool, "fork", "");
  ASSERT_TRUE(forked.ok()) << knit::failure_message(forked);
  EXPECT_EQ(forked.value(), "forked");
}

}  // namespace
