// dispatch_policy: every branch of the dispatch rule (docs/design.md, "Dispatch", step 2)
// on hand-made worker snapshots, without threads.
#include "dispatch_policy.hpp"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace {

using knit::detail::choose_worker;
using knit::detail::dispatch_choice;
using knit::detail::dispatch_inputs;
using knit::detail::dispatch_rule;
using knit::detail::worker_snapshot;
using knit::detail::worker_state;

constexpr std::int64_t us = 1000;
constexpr std::int64_t now = 1'000'000 * us;  // any fixed steady-clock reading

worker_snapshot spinning(std::size_t depth = 0) { return {depth, 8, 0, worker_state::spinning}; }
worker_snapshot parked(std::size_t depth = 0) { return {depth, 8, 0, worker_state::parked}; }
// Awake and in a call that started `elapsed` ago, with `depth` calls queued behind it.
worker_snapshot running(std::int64_t elapsed, std::size_t depth = 0) {
  return {depth, 8, now - elapsed, worker_state::running};
}
worker_snapshot between_calls(std::size_t depth = 0) {
  return {depth, 8, 0, worker_state::running};
}
worker_snapshot full() { return {8, 8, 0, worker_state::spinning}; }
worker_snapshot retired(worker_snapshot s) {
  s.retired = true;
  return s;
}

// Calls take 10 µs on average; a wake-up costs 50 µs.
dispatch_inputs inputs(unsigned start = 0) { return {10 * us, 50 * us, now, start}; }

dispatch_choice choose(const std::vector<worker_snapshot>& w, const dispatch_inputs& in) {
  return choose_worker(w, in);
}

TEST(dispatch_policy, spinning_worker_with_empty_ring_wins) {
  // An awake worker with nothing left to run would also do, but the spinner needs no wait at all.
  const auto c = choose({between_calls(), parked(), spinning()}, inputs());
  EXPECT_EQ(c.worker, 2);
  EXPECT_EQ(c.rule, dispatch_rule::spinning_idle);
}

TEST(dispatch_policy, spinning_worker_with_queued_calls_is_not_idle) {
  // Spinning with 1 queued: wait 10 µs < 50 µs, so rule 2 takes it, not rule 1.
  const auto c = choose({parked(), spinning(1)}, inputs());
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::sooner_than_wake);
}

TEST(dispatch_policy, awake_worker_sooner_than_a_wake_up_beats_a_parked_one) {
  // 5 µs left of its call + 1 queued call of 10 µs = 15 µs < 50 µs wake cost.
  const auto c = choose({parked(), running(5 * us, 1)}, inputs());
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::sooner_than_wake);
}

TEST(dispatch_policy, awake_worker_slower_than_a_wake_up_loses_to_a_parked_one) {
  // 5 µs left + 5 queued × 10 µs = 55 µs >= 50 µs: waking the parked worker is sooner.
  const auto c = choose({running(5 * us, 5), parked()}, inputs());
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::parked);
}

TEST(dispatch_policy, smallest_expected_wait_wins) {
  // Expected waits: 8 µs left + 2 × 10 µs = 28 µs; 2 µs left; 9 µs left.
  const auto c = choose({running(2 * us, 2), running(8 * us, 0), running(1 * us, 0)}, inputs());
  EXPECT_EQ(c.worker, 1);  // 2 µs left beats 9 µs and 28 µs
  EXPECT_EQ(c.rule, dispatch_rule::sooner_than_wake);
}

TEST(dispatch_policy, unknown_length_call_holds_nothing_back) {
  // Its call has run 30 µs, longer than the 10 µs estimate: no call queues behind it,
  // even with an empty ring, while a parked peer can be woken.
  auto c = choose({running(30 * us), parked()}, inputs());
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::parked);
  // Exactly the estimate counts as unknown too (the elapsed time is not below it).
  c = choose({running(10 * us), parked()}, inputs());
  EXPECT_EQ(c.rule, dispatch_rule::parked);
}

TEST(dispatch_policy, no_estimate_yet_makes_every_running_call_unknown) {
  dispatch_inputs in = inputs();
  in.call_ns_estimate = 0;
  auto c = choose({running(1), parked()}, in);
  EXPECT_EQ(c.rule, dispatch_rule::parked);
  // A worker between calls with an empty ring still takes it: it claims ours next.
  c = choose({parked(), between_calls()}, in);
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::sooner_than_wake);
}

TEST(dispatch_policy, zero_wake_cost_turns_rule_two_off) {
  dispatch_inputs in = inputs();
  in.wake_cost_ns = 0;
  const auto c = choose({between_calls(), parked()}, in);
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::parked);
}

TEST(dispatch_policy, lowest_index_parked_worker_whatever_the_scan_start) {
  const auto c = choose({running(30 * us), parked(), running(30 * us), parked()}, inputs(2));
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::parked);
}

TEST(dispatch_policy, shortest_ring_when_nobody_is_idle_soon_or_parked) {
  const auto c = choose({running(30 * us, 3), running(30 * us, 1), running(30 * us, 2)}, inputs());
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::shortest_ring);
}

TEST(dispatch_policy, shortest_ring_ties_go_to_the_first_in_scan_order) {
  const std::vector<worker_snapshot> w{running(30 * us, 1), running(30 * us, 1),
                                       running(30 * us, 1)};
  EXPECT_EQ(choose(w, inputs(0)).worker, 0);
  EXPECT_EQ(choose(w, inputs(2)).worker, 2);
  EXPECT_EQ(choose(w, inputs(1)).worker, 1);
}

TEST(dispatch_policy, every_ring_full_gives_no_choice) {
  const auto c = choose({full(), full(), full()}, inputs());
  EXPECT_EQ(c.worker, -1);
  EXPECT_EQ(c.rule, dispatch_rule::none);
  EXPECT_EQ(choose({}, inputs()).rule, dispatch_rule::none);
}

TEST(dispatch_policy, full_rings_are_skipped) {
  // The full worker reports spinning: its state must not count.
  const auto c = choose({full(), running(30 * us, 4)}, inputs());
  EXPECT_EQ(c.worker, 1);
  EXPECT_EQ(c.rule, dispatch_rule::shortest_ring);
}

TEST(dispatch_policy, retired_workers_are_skipped) {
  auto c = choose({retired(spinning()), retired(parked()), running(30 * us, 2)}, inputs());
  EXPECT_EQ(c.worker, 2);
  EXPECT_EQ(c.rule, dispatch_rule::shortest_ring);
  c = choose({retired(spinning()), retired(between_calls())}, inputs());
  EXPECT_EQ(c.rule, dispatch_rule::none);
}

TEST(dispatch_policy, round_robin_start_shares_equal_candidates) {
  const std::vector<worker_snapshot> spinners{spinning(), spinning(), spinning()};
  for (unsigned start = 0; start < 3; ++start) {
    const auto c = choose(spinners, inputs(start));
    EXPECT_EQ(c.worker, static_cast<int>(start));
    EXPECT_EQ(c.rule, dispatch_rule::spinning_idle);
  }
  // Equal expected waits: the first in scan order, i.e. after the last choice.
  const std::vector<worker_snapshot> awake{between_calls(), between_calls()};
  EXPECT_EQ(choose(awake, inputs(1)).worker, 1);
  EXPECT_EQ(choose(awake, inputs(0)).worker, 0);
}

TEST(dispatch_policy, the_first_spinner_in_scan_order_ends_the_scan) {
  // The host stops building snapshots at the first one that ends the scan (pool.cpp).
  const std::vector<worker_snapshot> w{spinning(1), between_calls(), spinning()};
  EXPECT_FALSE(knit::detail::ends_scan(w[0]));  // a queued call: not idle
  EXPECT_FALSE(knit::detail::ends_scan(w[1]));  // awake but not spinning
  EXPECT_TRUE(knit::detail::ends_scan(w[2]));
  EXPECT_FALSE(knit::detail::ends_scan(full()));
  EXPECT_EQ(choose(w, inputs(0)).worker, 2);  // beats the awake worker with a 0 µs wait
}

TEST(dispatch_policy, host_reads_only_what_the_rule_uses) {
  using knit::detail::reads_call_start;
  using knit::detail::reads_state;
  EXPECT_FALSE(reads_state(full()));
  EXPECT_FALSE(reads_state(retired(spinning())));
  EXPECT_TRUE(reads_state(parked(3)));
  EXPECT_FALSE(reads_call_start(parked(), 50 * us));
  EXPECT_FALSE(reads_call_start(between_calls(), 0));
  EXPECT_TRUE(reads_call_start(between_calls(), 50 * us));
}

// One seat: the host reads nothing of its worker, so the rule must choose the same from the
// snapshot's defaults (running, between calls) as from whatever the worker is doing: its
// ring when it has room, none when it is full.
TEST(dispatch_policy, one_seat_chooses_its_ring_whatever_its_worker_does) {
  EXPECT_FALSE(knit::detail::reads_workers(1));
  EXPECT_TRUE(knit::detail::reads_workers(2));
  const worker_snapshot as_read_by_nobody = between_calls();
  for (const std::size_t depth : {0, 1, 7, 8}) {
    for (const worker_state st :
         {worker_state::running, worker_state::spinning, worker_state::parked}) {
      for (const std::int64_t started : {std::int64_t{0}, now - us, now - 1'000'000 * us}) {
        for (const std::int64_t estimate : {std::int64_t{0}, 2 * us, 500 * us}) {
          dispatch_inputs in = inputs();
          in.call_ns_estimate = estimate;
          const worker_snapshot real{depth, 8, started, st, false};
          worker_snapshot unread = as_read_by_nobody;
          unread.depth = depth;
          const int expected = depth < 8 ? 0 : -1;
          EXPECT_EQ(choose({real}, in).worker, expected) << depth << " " << int(st);
          EXPECT_EQ(choose({unread}, in).worker, expected) << depth;
        }
      }
    }
  }
}

// The loop pool.cpp ran before the rule moved here, verbatim but for reading the snapshots
// instead of the atomics: the refactor must choose exactly as it did.
int reference_choice(const std::vector<worker_snapshot>& ws, const dispatch_inputs& in) {
  const unsigned n = static_cast<unsigned>(ws.size());
  int behind = -1, parked = -1, shortest = -1, chosen = -1;
  std::int64_t best_wait = in.wake_cost_ns;
  std::size_t shortest_depth = ~std::size_t{0};
  for (unsigned k = 0; k < n; ++k) {
    const unsigned i = (in.start + k) % n;
    const worker_snapshot& w = ws[i];
    if (w.retired) continue;
    const std::size_t depth = w.depth;
    if (depth >= w.capacity) continue;
    const worker_state st = w.state;
    if (depth == 0 && st == worker_state::spinning) {
      chosen = static_cast<int>(i);
      break;
    }
    if (st == worker_state::parked) {
      if (parked < 0 || i < static_cast<unsigned>(parked)) parked = static_cast<int>(i);
    } else if (best_wait > 0) {
      const std::int64_t started = w.call_started_ns;
      std::int64_t left = 0;
      bool known = true;
      if (started != 0) {
        const std::int64_t elapsed = in.now_ns - started;
        known = elapsed < in.call_ns_estimate;
        left = in.call_ns_estimate - elapsed;
      }
      const std::int64_t wait = left + static_cast<std::int64_t>(depth) * in.call_ns_estimate;
      if (known && wait < best_wait) {
        best_wait = wait;
        behind = static_cast<int>(i);
      }
    }
    if (depth < shortest_depth) {
      shortest_depth = depth;
      shortest = static_cast<int>(i);
    }
  }
  if (chosen < 0) chosen = behind >= 0 ? behind : parked >= 0 ? parked : shortest;
  return chosen;
}

TEST(dispatch_policy, chooses_as_the_loop_it_replaced_on_random_snapshots) {
  std::mt19937_64 rng(20261201);  // fixed start: the same 20,000 cases every run
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 20'000; ++round) {
    std::vector<worker_snapshot> w(static_cast<std::size_t>(pick(1, 6)));
    for (auto& s : w) {
      s.capacity = 4;
      s.depth = static_cast<std::size_t>(pick(0, 4));
      s.state = static_cast<worker_state>(pick(0, 2));
      s.retired = pick(0, 7) == 0;
      s.call_started_ns = pick(0, 2) == 0 ? 0 : now - pick(0, 30) * us;
    }
    dispatch_inputs in{pick(0, 20) * us, pick(0, 1) == 0 ? 0 : pick(1, 60) * us, now,
                       static_cast<unsigned>(pick(0, static_cast<int>(w.size()) - 1))};
    const int expected = reference_choice(w, in);
    ASSERT_EQ(choose_worker(w, in).worker, expected) << "round " << round;
    // What the host leaves unbuilt: after the first snapshot that ends the scan, nothing
    // it holds may change the choice.
    for (std::size_t k = 0; k < w.size(); ++k) {
      const std::size_t i = (in.start + k) % w.size();
      if (!knit::detail::ends_scan(w[i])) continue;
      for (std::size_t j = k + 1; j < w.size(); ++j) {
        w[(in.start + j) % w.size()] = {0, 4, 0, worker_state::spinning};  // would win if read
      }
      ASSERT_EQ(choose_worker(w, in).worker, expected) << "round " << round;
      break;
    }
  }
}

}  // namespace
