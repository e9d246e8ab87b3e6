// Process workers: a task that crashes fails its own call with errc::worker_crashed naming
// the task, the pid and the signal or exit code, while good calls around it succeed; the
// shared slot is checked; payload bounds, exceptions, the handshake and names.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using knit_test::process_call;
using knit_test::run_calls;
using knit_test::run_one;

// Every test starts from the default options and counts the stats from its own start (the
// options and counters are process-wide; ctest runs each test in its own process, a plain
// run of the binary runs them all in one).
class process_test : public testing::Test {
 protected:
  void SetUp() override {
    knit_test::use_process_options({});
    base_ = knit::current_process_stats();
  }
  std::uint64_t crashes() const { return knit::current_process_stats().crashes - base_.crashes; }
  std::uint64_t started() const {
    return knit::current_process_stats().children_started - base_.children_started;
  }
  knit::process_stats base_;
};

struct crash_case {
  const char* task;
  const char* bytes;
  const char* expected;           // in the message
  const char* or_else = nullptr;  // or this one instead, when two outcomes are both right
  // Children it kills: 2 for a task that also erases its lane's claim, which makes its call
  // look never begun, so it is sent again once, alone, to an idle child, and kills that one.
  unsigned crashes = 1;
};

// Names the case in gtest's output (not as bytes).
void PrintTo(const crash_case& c, std::ostream* os) { *os << c.task << "(" << c.bytes << ")"; }

class process_crash_test : public testing::TestWithParam<crash_case> {};

// 100 good calls around one crash on a two-thread pool: the crash fails alone, every good
// call (those running beside it and those queued behind it, sent again to another child)
// succeeds, and the next call on the crashed worker gets a new child. The same for a task
// that breaks the protocol (a bad answer): only its own call fails.
TEST_P(process_crash_test, fails_its_own_call_and_the_rest_succeed) {
  knit::process_options options;
  options.crash_loop_crashes = 100;  // one crash: no backoff involved
  knit_test::use_process_options(options);
  const std::uint64_t crashes_before = knit::current_process_stats().crashes;
  knit::pool pool(knit_test::threads(2));
  const crash_case& c = GetParam();
  std::vector<process_call> calls;
  for (int i = 0; i < 100; ++i) {
    if (i == 30) calls.push_back({c.task, c.bytes, std::nullopt});
    calls.push_back({"echo", "payload " + std::to_string(i), std::nullopt});
  }
  ASSERT_TRUE(run_calls(pool, calls));
  int good = 0;
  for (process_call& call : calls) {
    ASSERT_TRUE(call.result.has_value());
    if (call.task == "echo") {
      ASSERT_TRUE(call.result->ok()) << knit::failure_message(*call.result);
      EXPECT_EQ(call.result->value(), call.bytes);
      ++good;
      continue;
    }
    ASSERT_FALSE(call.result->ok());
    EXPECT_EQ(call.result->error(), knit::errc::worker_crashed);
    const std::string message = knit::failure_message(*call.result);
    EXPECT_NE(message.find(std::string("'") + c.task + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("pid "), std::string::npos) << message;
    const bool as_expected = message.find(c.expected) != std::string::npos ||
                             (c.or_else && message.find(c.or_else) != std::string::npos);
    EXPECT_TRUE(as_expected) << message;
  }
  EXPECT_EQ(good, 100);
  EXPECT_EQ(knit::current_process_stats().crashes - crashes_before, c.crashes);
}

INSTANTIATE_TEST_SUITE_P(
    each_way, process_crash_test,
    testing::Values(
        crash_case{"segv", "", "killed by signal 11 (SIGSEGV)"},
        crash_case{"abort", "", "killed by signal 6 (SIGABRT)"},
        crash_case{"exit3", "", "exited with code 3"},
        crash_case{"stack_overflow", "", "killed by signal 11 (SIGSEGV)"},
        // The scribble (every header word 0xff, the refused-call word and the claims
        // included) is no answer (answer_seq is not the call's nonce) and names no refused
        // call (the kernel says SIGSEGV): a crash, run twice (its claim erased).
        crash_case{"scribble_crash", "", "killed by signal 11 (SIGSEGV)", nullptr, 2},
        crash_case{"scribble_answer", "status", "answer_status 99 out of range"},
        crash_case{"scribble_answer", "bytes", "over the arena"}),
    [](const testing::TestParamInfo<crash_case>& info) {
      return std::string(info.param.task) + (info.param.bytes[0] ? "_" : "") + info.param.bytes;
    });

TEST_F(process_test, a_crash_is_followed_by_a_replacement_child) {
  knit::pool pool(knit_test::threads(1));
  auto first = run_one(pool, "pid", "");
  ASSERT_TRUE(first.ok()) << knit::failure_message(first);
  auto crash = run_one(pool, "segv", "");
  EXPECT_EQ(crash.error(), knit::errc::worker_crashed);
  EXPECT_NE(knit::failure_message(crash).find("pid " + first.value()), std::string::npos)
      << knit::failure_message(crash);
  auto second = run_one(pool, "pid", "");
  ASSERT_TRUE(second.ok()) << knit::failure_message(second);
  EXPECT_NE(second.value(), first.value());
  EXPECT_EQ(started(), 2u);
}

TEST_F(process_test, a_child_killed_between_calls_fails_no_call) {
  knit::pool pool(knit_test::threads(1));
  auto first = run_one(pool, "pid", "");
  ASSERT_TRUE(first.ok());
  const int pid = std::stoi(first.value());
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // The starter reaps it at once, with no call (child_end.hpp): gone, not even a zombie.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (knit_test::process_state(pid) != 0 && std::chrono::steady_clock::now() < limit) {
    ::usleep(1000);
  }
  ASSERT_EQ(knit_test::process_state(pid), 0) << "the killed idle child was not reaped";
  EXPECT_EQ(crashes(), 1u) << "an idle death is counted when it is seen, not at the next call";
  auto second = run_one(pool, "pid", "");
  ASSERT_TRUE(second.ok()) << knit::failure_message(second);
  EXPECT_NE(second.value(), first.value());
  EXPECT_EQ(crashes(), 1u);
  EXPECT_EQ(knit_test::process_state(pid), 0) << "the dead child was not reaped";
}

TEST_F(process_test, children_are_named_knit_proc_n) {
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "pid", "");
  ASSERT_TRUE(r.ok());
  const std::string comm = knit_test::process_comm(std::stoi(r.value()));
  EXPECT_EQ(comm.rfind("knit-proc-", 0), 0u) << comm;
}

TEST_F(process_test, a_request_over_the_arena_fails_clearly_and_nothing_else) {
  knit::process_options options;
  options.arena_bytes = 4096;
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  auto before = run_one(pool, "pid", "");
  ASSERT_TRUE(before.ok());
  auto over = run_one(pool, "echo", std::string(4097, 'a'));
  EXPECT_EQ(over.error(), knit::errc::payload_too_large);
  EXPECT_NE(knit::failure_message(over).find("request of 4097 bytes is over the arena of 4096"),
            std::string::npos)
      << knit::failure_message(over);
  auto full = run_one(pool, "echo", std::string(4096, 'b'));
  ASSERT_TRUE(full.ok()) << knit::failure_message(full);
  EXPECT_EQ(full.value(), std::string(4096, 'b'));
  auto after = run_one(pool, "pid", "");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.value(), before.value()) << "the child should not have been replaced";
  EXPECT_EQ(crashes(), 0u);
}

TEST_F(process_test, an_answer_over_the_arena_fails_clearly_and_the_child_lives) {
  knit::process_options options;
  options.arena_bytes = 4096;
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  auto before = run_one(pool, "pid", "");
  ASSERT_TRUE(before.ok());
  auto over = run_one(pool, "repeat", "5000");
  EXPECT_EQ(over.error(), knit::errc::payload_too_large);
  EXPECT_NE(knit::failure_message(over).find("answer of 5000 bytes"), std::string::npos)
      << knit::failure_message(over);
  auto after = run_one(pool, "pid", "");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.value(), before.value());
}

TEST_F(process_test, a_task_that_throws_fails_with_its_message) {
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "throw", "");
  EXPECT_EQ(r.error(), knit::errc::task_failed);
  EXPECT_NE(knit::failure_message(r).find("'throw' threw: boom from the child"), std::string::npos)
      << knit::failure_message(r);
  EXPECT_EQ(crashes(), 0u);
}

TEST_F(process_test, a_registry_mismatch_fails_the_start_clearly) {
  knit::process_options options;
  options.worker_executable = KNIT_SKEW_WORKER;
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "echo", "x");
  EXPECT_EQ(r.error(), knit::errc::worker_start_failed);
  const std::string message = knit::failure_message(r);
  EXPECT_NE(message.find("task registry mismatch"), std::string::npos) << message;
  EXPECT_NE(message.find(" has 2 (hash"), std::string::npos) << message;
  EXPECT_TRUE(knit_test::children_of_this_process().empty());
}

TEST_F(process_test, a_worker_that_never_handshakes_fails_the_start_clearly) {
  knit::process_options options;
  options.worker_executable = "/bin/true";  // exits 0 without calling worker_main
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "echo", "x");
  EXPECT_EQ(r.error(), knit::errc::worker_start_failed);
  EXPECT_NE(knit::failure_message(r).find("exited with code 0 before its handshake"),
            std::string::npos)
      << knit::failure_message(r);
}

TEST_F(process_test, an_unknown_task_is_refused_at_submit) {
  knit::pool pool(knit_test::threads(1));
  EXPECT_THROW((void)knit::submit_process(pool, "no_such_task", "", [](auto) {}),
               std::invalid_argument);
  EXPECT_EQ(pool.pending(), 0u);
}

TEST_F(process_test, registration_after_the_first_child_is_refused) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "x").ok());
  EXPECT_THROW(knit::register_process_task("late", [](std::string_view) { return std::string(); }),
               std::logic_error);
}

TEST_F(process_test, options_are_validated) {
  knit::process_options options;
  options.arena_bytes = 0;
  EXPECT_THROW(knit_test::use_process_options(options), knit::config_error);
  options = {};
  options.backoff_initial = std::chrono::milliseconds(10);
  options.backoff_max = std::chrono::milliseconds(5);
  EXPECT_THROW(knit_test::use_process_options(options), knit::config_error);
}

// Both children are started before the calls (process_workers): a child a ring starts at
// its first call is started off the request path, so under load the two calls could both
// have run on the first one while the second was still starting (children_live 1).
TEST_F(process_test, shutting_the_pool_down_reaps_every_child) {
  {
    knit::pool pool(knit_test::threads(2));
    knit::process_workers workers(pool);
    EXPECT_EQ(knit::current_process_stats().children_live, 2u);
    std::vector<process_call> calls{{"sleep_pid", "50", std::nullopt},
                                    {"sleep_pid", "50", std::nullopt}};
    ASSERT_TRUE(run_calls(pool, calls));
    for (const process_call& c : calls) ASSERT_TRUE(c.result->ok());
    EXPECT_NE(calls[0].result->value(), calls[1].result->value());  // one on each child
    EXPECT_EQ(knit::current_process_stats().children_live, 2u);
  }
  EXPECT_EQ(knit::current_process_stats().children_live, 0u);
  EXPECT_TRUE(knit_test::children_of_this_process().empty());
  EXPECT_EQ(knit_test::memfd_mappings(), 0u);
}

}  // namespace
