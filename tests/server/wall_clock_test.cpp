// The wall-clock time of a steady reading (loops/wall_clock.hpp): what /ping and /plaintext
// put in their responses.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "loops/wall_clock.hpp"

namespace {

using namespace std::chrono_literals;
using knit_server::wall_clock_from_steady;
using steady = std::chrono::steady_clock;
using wall = std::chrono::system_clock;

// The time given for a steady reading lies between wall-clock reads taken just before and
// just after it: never early (1 µs allowed for rounding), and late by no more than the gap a
// pair may have (20 µs; 50 allowed). Readings a few hundred microseconds apart use one pair
// (the offset must be added: the pair's own wall time would be 200 µs early), and ones farther
// apart a new pair.
TEST(wall_clock, gives_the_wall_time_of_a_steady_reading) {
  wall_clock_from_steady clock;
  for (int i = 0; i < 200; ++i) {
    const wall::time_point before = wall::now();
    const steady::time_point t = steady::now();
    const wall::time_point at = clock.at(t);
    const wall::time_point after = wall::now();
    ASSERT_GE(at, before - 1us) << "reading " << i;
    ASSERT_LE(at, after + 50us) << "reading " << i;
    std::this_thread::sleep_for(i % 2 == 0 ? 200us : 2ms);
  }
}

// A reading taken before the pair (the session reads steady_clock, the pair is read later
// inside at()) is placed before the pair's wall time, not at it.
TEST(wall_clock, places_an_earlier_reading_before_the_pair) {
  wall_clock_from_steady clock;
  const wall::time_point before = wall::now();
  const steady::time_point t = steady::now();
  std::this_thread::sleep_for(3ms);
  const wall::time_point at = clock.at(t);  // the first call: reads a pair now
  ASSERT_GE(at, before - 1us);
  ASSERT_LT(at, before + 2ms);
}

TEST(wall_clock, each_thread_has_its_own_pair) {
  // wall_time_at() from two threads at once (multi mode's loops): each sees a right time.
  auto check = [] {
    for (int i = 0; i < 1000; ++i) {
      const wall::time_point before = wall::now();
      const wall::time_point at = knit_server::wall_time_at(steady::now());
      const wall::time_point after = wall::now();
      ASSERT_GE(at, before - 1us);
      ASSERT_LE(at, after + 50us);
    }
  };
  std::thread other(check);
  check();
  other.join();
}

}  // namespace
