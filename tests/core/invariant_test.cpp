// KNIT_ASSERT (src/invariant.hpp): a violated invariant aborts with file:line and the
// condition. This file forces the checks on (KNIT_FORCE_INVARIANTS), so it tests the same
// thing in Release, Debug and sanitizer builds; it includes nothing else of the library's,
// so no inline function of the library is compiled here with checks the library lacks.
#define KNIT_FORCE_INVARIANTS 1
#include "invariant.hpp"

#include <gtest/gtest.h>

namespace {

static_assert(KNIT_INVARIANTS_CHECKED == 1, "KNIT_FORCE_INVARIANTS turns the checks on");

TEST(invariant, a_holding_condition_does_nothing) {
  int evaluated = 0;
  KNIT_ASSERT(++evaluated == 1);
  EXPECT_EQ(evaluated, 1) << "a checked build evaluates the condition once";
}

TEST(invariant, a_violated_condition_aborts_naming_file_line_and_condition) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const int depth = 3;
  const int capacity = 2;
  EXPECT_DEATH(KNIT_ASSERT(depth < capacity),
               "knit: invariant violated at .*invariant_test\\.cpp:[0-9]+: depth < capacity");
}

}  // namespace
