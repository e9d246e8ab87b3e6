// call_table: ids name their call until it is released, stale ids miss after the slot is
// reused, and a failed submit gives its slot back.
#include "call_table.hpp"

#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "fault_injection.hpp"

namespace {

using knit::detail::call_base;
using knit::detail::call_table;

// The table reads only id and delivered; the record's operations are never called here.
struct fake_call final : call_base {
  void run() noexcept override {}
  void deliver(std::error_code) noexcept override {}
  void drop_handler() noexcept override {}
  void destroy() noexcept override {}
};

TEST(call_table, finds_a_committed_call_until_released) {
  call_table t;
  fake_call a;
  const auto r = t.reserve();
  a.id = r.id;
  EXPECT_NE(r.id, 0u);
  EXPECT_EQ(t.find(r.id), nullptr);  // reserved, not committed
  t.commit(r, &a);
  EXPECT_EQ(t.find(r.id), &a);
  a.delivered = true;
  EXPECT_EQ(t.find(r.id), nullptr);  // delivered: no longer named
  a.delivered = false;
  t.release(r.id);
  EXPECT_EQ(t.find(r.id), nullptr);
  EXPECT_EQ(t.find(0), nullptr);
}

TEST(call_table, stale_id_misses_after_its_slot_is_reused) {
  call_table t;
  fake_call a, b;
  const auto ra = t.reserve();
  a.id = ra.id;
  t.commit(ra, &a);
  t.release(ra.id);
  const auto rb = t.reserve();
  EXPECT_TRUE(rb.reused);
  EXPECT_EQ(rb.index, ra.index);  // same slot...
  EXPECT_NE(rb.id, ra.id);        // ...new id
  b.id = rb.id;
  t.commit(rb, &b);
  EXPECT_EQ(t.find(ra.id), nullptr);
  EXPECT_EQ(t.find(rb.id), &b);
}

TEST(call_table, undo_gives_the_slot_back) {
  call_table t;
  const auto r1 = t.reserve();
  EXPECT_FALSE(r1.reused);
  t.undo(r1);
  const auto r2 = t.reserve();  // takes the same slot from the free list
  EXPECT_TRUE(r2.reused);
  EXPECT_EQ(r2.index, r1.index);
  t.undo(r2);  // a reused slot never left the free list
  EXPECT_TRUE(t.reserve().reused);
}

TEST(call_table, for_each_visits_committed_calls_in_slot_order) {
  call_table t;
  fake_call calls[3];
  for (auto& c : calls) {
    const auto r = t.reserve();
    c.id = r.id;
    t.commit(r, &c);
  }
  t.release(calls[1].id);
  std::vector<call_base*> seen;
  t.for_each([&](call_base* c) { seen.push_back(c); });
  EXPECT_EQ(seen, (std::vector<call_base*>{&calls[0], &calls[2]}));
}

TEST(call_table, failed_growth_leaves_the_table_as_it_was) {
  call_table t;
  knit::detail::allocation_countdown.store(1);
  EXPECT_THROW(t.reserve(), std::bad_alloc);
  knit::detail::allocation_countdown.store(0);
  const auto r = t.reserve();
  EXPECT_EQ(r.index, 0u);  // nothing was taken by the failed attempt
  EXPECT_FALSE(r.reused);
}

}  // namespace
