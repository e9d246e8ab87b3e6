// start_deadlines.hpp: the queue-wait deadline's FIFO, without a pool: which calls it gives up
// on, when, and that a call done or started in time is never refused.
#include "placement/start_deadlines.hpp"  // first: the header must be self-contained

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace knit_server {
namespace {

using namespace std::chrono_literals;
using time_point = start_deadlines::clock::time_point;

const time_point t0{};  // only differences of the times fed in matter

TEST(start_deadlines, gives_up_only_on_calls_past_their_deadline_oldest_first) {
  start_deadlines d(100ms);
  d.add(11, t0);
  d.add(12, t0 + 10ms);
  d.add(13, t0 + 20ms);
  EXPECT_EQ(d.next_due(), t0 + 100ms);
  std::vector<knit::call_id> asked;
  const auto refuse = [&](knit::call_id id) {
    asked.push_back(id);
    return true;
  };
  EXPECT_EQ(d.expire(t0 + 99ms, refuse), 0u);  // none due yet
  EXPECT_TRUE(asked.empty());
  EXPECT_EQ(d.expire(t0 + 110ms, refuse), 2u);  // 11 and 12 are due, 13 is not
  EXPECT_EQ(asked, (std::vector<knit::call_id>{11, 12}));
  EXPECT_EQ(d.next_due(), t0 + 120ms);
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.expire(t0 + 1s, refuse), 1u);
  EXPECT_EQ(asked.back(), 13u);
  EXPECT_EQ(d.next_due(), std::nullopt);
  EXPECT_EQ(d.expire(t0 + 2s, refuse), 0u);  // each call is asked about once
  EXPECT_EQ(asked.size(), 3u);
}

TEST(start_deadlines, a_cheap_burst_done_before_its_deadline_is_never_refused) {
  // A cold server's burst of cheap calls: all admitted (no estimate), all done within the
  // limit. None is handed to give_up, and nothing stays tracked.
  start_deadlines d(350ms);
  std::vector<std::uint64_t> tickets;
  for (knit::call_id id = 1; id <= 300; ++id) tickets.push_back(d.add(id, t0));
  for (std::uint64_t t : tickets) d.done(t);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.next_due(), std::nullopt);
  int asked = 0;
  EXPECT_EQ(d.expire(t0 + 1s, [&](knit::call_id) { return ++asked, true; }), 0u);
  EXPECT_EQ(asked, 0);
}

TEST(start_deadlines, a_call_running_at_its_deadline_is_not_counted_as_refused) {
  start_deadlines d(100ms);
  d.add(1, t0);  // started in time: cancel would say false
  d.add(2, t0);  // still queued
  EXPECT_EQ(d.expire(t0 + 100ms, [](knit::call_id id) { return id == 2; }), 1u);
  EXPECT_EQ(d.size(), 0u);
}

TEST(start_deadlines, completions_out_of_order_leave_from_the_front_when_it_is_done) {
  start_deadlines d(100ms);
  const std::uint64_t a = d.add(1, t0);
  const std::uint64_t b = d.add(2, t0 + 1ms);
  const std::uint64_t c = d.add(3, t0 + 2ms);
  d.done(b);  // a later call finished first (another worker)
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d.next_due(), t0 + 100ms);
  d.done(a);  // the front and the done one behind it leave
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.next_due(), t0 + 102ms);
  std::vector<knit::call_id> asked;
  d.expire(t0 + 1s, [&](knit::call_id id) { return asked.push_back(id), false; });
  EXPECT_EQ(asked, (std::vector<knit::call_id>{3}));  // 1 and 2 were done: never asked
  d.done(c);  // a completion after its deadline was checked changes nothing
  EXPECT_EQ(d.size(), 0u);
}

TEST(start_deadlines, tickets_are_handed_out_in_order_and_a_call_is_named_after_its_submit) {
  start_deadlines d(10ms);
  EXPECT_EQ(d.add(0, t0), 0u);  // added before the submit, named once it returned
  d.name(0, 7);
  std::vector<knit::call_id> asked;
  d.expire(t0 + 1s, [&](knit::call_id id) { return asked.push_back(id), true; });
  EXPECT_EQ(asked, (std::vector<knit::call_id>{7}));  // the front moves past ticket 0
  EXPECT_EQ(d.add(0, t0 + 1s), 1u);
  const std::uint64_t refused_by_the_pool = d.add(0, t0 + 1s);
  d.done(refused_by_the_pool);  // the submit failed: it never runs, it leaves when at the front
  d.name(1, 8);
  d.done(0);  // already checked: ignored
  EXPECT_EQ(d.size(), 2u);
  asked.clear();
  d.expire(t0 + 2s, [&](knit::call_id id) { return asked.push_back(id), true; });
  EXPECT_EQ(asked, (std::vector<knit::call_id>{8}));
  EXPECT_EQ(d.size(), 0u);
}

TEST(start_deadlines, give_up_may_submit_and_complete_calls) {
  // A refused call's handler writes its 503, and the next request may be submitted (and a
  // completion marked) before expire() returns.
  start_deadlines d(100ms);
  d.add(1, t0);
  const std::uint64_t second = d.add(2, t0);
  std::vector<knit::call_id> asked;
  const std::size_t refused = d.expire(t0 + 100ms, [&](knit::call_id id) {
    asked.push_back(id);
    if (id == 1) {
      d.done(second);        // 2 completed meanwhile: never asked about
      d.add(3, t0 + 100ms);  // due later: not asked in this expire
    }
    return true;
  });
  EXPECT_EQ(refused, 1u);
  EXPECT_EQ(asked, (std::vector<knit::call_id>{1}));
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.next_due(), t0 + 200ms);
}

}  // namespace
}  // namespace knit_server
