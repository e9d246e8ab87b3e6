// The moves of a call record's state word (src/call_state.hpp): the lifecycle's table, and
// try_move's result on both sides of each race. The abort on an illegal move is checked
// only where the library's checks are on (Debug, sanitizer builds); elsewhere that test
// says it skipped and why.
#include "call_state.hpp"

#include <gtest/gtest.h>

#include <system_error>

namespace {

using knit::detail::call_state;
using knit::detail::is_call_move;
using knit::detail::may_lose_to;
using knit::detail::try_move;

// A record with no task: only its state word is used.
class bare_call final : public knit::detail::call_base {
 public:
  void run() noexcept override {}
  void deliver(std::error_code) noexcept override {}
  void drop_handler() noexcept override {}
  void destroy() noexcept override {}
};

TEST(call_state, the_lifecycle_has_four_moves) {
  EXPECT_TRUE(is_call_move(call_state::queued, call_state::running));
  EXPECT_TRUE(is_call_move(call_state::queued, call_state::abandoned));
  EXPECT_TRUE(is_call_move(call_state::running, call_state::done));
  EXPECT_TRUE(is_call_move(call_state::running, call_state::stuck));
  EXPECT_FALSE(is_call_move(call_state::queued, call_state::done));
  EXPECT_FALSE(is_call_move(call_state::running, call_state::abandoned));
  EXPECT_FALSE(is_call_move(call_state::done, call_state::running));
  EXPECT_FALSE(is_call_move(call_state::abandoned, call_state::running));
  EXPECT_FALSE(is_call_move(call_state::stuck, call_state::done));
}

TEST(call_state, each_move_loses_only_to_its_rival) {
  EXPECT_TRUE(may_lose_to(call_state::queued, call_state::running, call_state::abandoned));
  EXPECT_FALSE(may_lose_to(call_state::queued, call_state::running, call_state::done));
  EXPECT_TRUE(may_lose_to(call_state::queued, call_state::abandoned, call_state::running));
  EXPECT_FALSE(may_lose_to(call_state::queued, call_state::abandoned, call_state::abandoned));
  EXPECT_TRUE(may_lose_to(call_state::running, call_state::done, call_state::stuck));
  EXPECT_FALSE(may_lose_to(call_state::running, call_state::done, call_state::queued));
  EXPECT_TRUE(may_lose_to(call_state::running, call_state::stuck, call_state::done));
  EXPECT_FALSE(may_lose_to(call_state::running, call_state::stuck, call_state::abandoned));
}

TEST(call_state, the_winner_moves_the_word_and_the_loser_leaves_it) {
  bare_call c;
  EXPECT_TRUE(try_move(c, call_state::queued, call_state::running));
  EXPECT_TRUE(try_move(c, call_state::running, call_state::stuck));  // the host retires it
  EXPECT_FALSE(try_move(c, call_state::running, call_state::done));  // the worker learns it
  EXPECT_EQ(c.state.load(), call_state::stuck);

  bare_call d;
  EXPECT_TRUE(try_move(d, call_state::queued, call_state::abandoned));  // cancelled
  EXPECT_FALSE(try_move(d, call_state::queued, call_state::running));   // handed back unrun
  EXPECT_EQ(d.state.load(), call_state::abandoned);
}

TEST(call_state, a_move_outside_the_lifecycle_aborts_in_checked_builds) {
  if (!KNIT_INVARIANTS_CHECKED) {
    GTEST_SKIP() << "Release build: the library's KNIT_ASSERT checks are compiled out "
                    "(tests/core/invariant_test.cpp tests the macro itself in every build)";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  bare_call c;
  EXPECT_DEATH(try_move(c, call_state::queued, call_state::done),
               "invariant violated at .*call_state\\.hpp:[0-9]+: is_call_move");
  bare_call d;
  d.state.store(call_state::done);  // as if a worker finished a call nobody claimed
  EXPECT_DEATH(try_move(d, call_state::queued, call_state::running),
               "invariant violated at .*call_state\\.hpp:[0-9]+: may_lose_to");
}

}  // namespace
