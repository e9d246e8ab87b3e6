// admission.hpp: the service meter, the expected-wait rule and the count backstop, without a pool.
#include "placement/admission.hpp"  // first: the header must be self-contained

#include <cstddef>

#include <gtest/gtest.h>

namespace knit_server {
namespace {

using namespace std::chrono_literals;
using time_point = service_meter::clock::time_point;

const time_point t0{};  // the meter only ever subtracts timestamps

// queue_state{ahead, threads, call_time, service_interval}.
queue_state measured(std::size_t ahead, std::size_t threads, std::chrono::nanoseconds interval) {
  return {ahead, threads, 0ns, interval};
}

// ---- expected_wait -------------------------------------------------------------------------

TEST(admission, nothing_waits_while_a_worker_is_free) {
  EXPECT_EQ(expected_wait({0, 1, 1s, 1s}), 0ns);
  EXPECT_EQ(expected_wait({1, 2, 1s, 1s}), 0ns);
  EXPECT_EQ(expected_wait({3, 4, 1s, 0ns}), 0ns);
}

TEST(admission, a_saturated_pool_makes_the_call_wait_one_interval_per_completion_it_needs) {
  // With `threads` calls ahead, the first completion frees a worker: one interval.
  EXPECT_EQ(expected_wait(measured(2, 2, 1ms)), 1ms);
  EXPECT_EQ(expected_wait(measured(11, 2, 1ms)), 10ms);
  EXPECT_EQ(expected_wait(measured(1, 1, 300us)), 300us);
  // The measured interval wins over the per-call estimate.
  EXPECT_EQ(expected_wait({11, 2, 1s, 1ms}), 10ms);
}

TEST(admission, before_any_measurement_the_call_time_is_shared_by_the_workers) {
  EXPECT_EQ(expected_wait({5, 1, 10ms, 0ns}), 50ms);
  EXPECT_EQ(expected_wait({5, 2, 10ms, 0ns}), 20ms);  // 4 completions x 10 ms / 2 workers
  EXPECT_EQ(expected_wait({100, 4, 0ns, 0ns}), 0ns);  // no estimate at all yet
  EXPECT_EQ(expected_wait({3, 0, 10ms, 0ns}), 30ms);  // zero threads read as one
}

TEST(admission, expected_wait_saturates_instead_of_overflowing) {
  EXPECT_EQ(expected_wait({1'000'000, 1, std::chrono::nanoseconds::max(), 0ns}),
            std::chrono::nanoseconds::max());
  EXPECT_EQ(expected_wait(measured(1'000'000, 1, std::chrono::nanoseconds::max())),
            std::chrono::nanoseconds::max());
}

// ---- decide_admission ----------------------------------------------------------------------

TEST(admission, accepts_while_the_wait_is_within_the_limit) {
  const admission_policy policy{250ms, 4096};
  EXPECT_EQ(decide_admission({0, 1, 1s, 0ns}, policy), admission::accept);        // idle pool
  EXPECT_EQ(decide_admission({1, 2, 1s, 1s}, policy), admission::accept);         // a free worker
  EXPECT_EQ(decide_admission(measured(26, 2, 10ms), policy), admission::accept);  // exactly 250 ms
}

TEST(admission, refuses_a_wait_over_the_limit) {
  const admission_policy policy{250ms, 4096};
  EXPECT_EQ(decide_admission(measured(27, 2, 10ms), policy), admission::reject_delay);
  EXPECT_EQ(decide_admission({1, 1, 300ms, 0ns}, policy), admission::reject_delay);
  EXPECT_EQ(decide_admission({2, 2, 300ms, 0ns}, policy), admission::accept);  // 150 ms
}

TEST(admission, the_count_cap_is_a_backstop_when_there_is_no_estimate) {
  const admission_policy policy{250ms, 8};
  EXPECT_EQ(decide_admission({7, 1, 0ns, 0ns}, policy), admission::accept);
  EXPECT_EQ(decide_admission({8, 1, 0ns, 0ns}, policy), admission::reject_count);
  EXPECT_EQ(decide_admission({8, 1, 1us, 1us}, policy), admission::reject_count);
}

TEST(admission, zero_turns_each_rule_off) {
  EXPECT_EQ(decide_admission({1000, 1, 1s, 1s}, {0ms, 0}), admission::accept);
  EXPECT_EQ(decide_admission({1000, 1, 1s, 1s}, {0ms, 2000}), admission::accept);
  EXPECT_EQ(decide_admission({1000, 1, 0ns, 0ns}, {1ms, 0}), admission::accept);
  EXPECT_EQ(decide_admission({1000, 1, 1ms, 0ns}, {1ms, 0}), admission::reject_delay);
}

// ---- service_meter -------------------------------------------------------------------------

TEST(service_meter, has_no_estimate_until_a_saturated_interval) {
  service_meter m;
  EXPECT_EQ(m.interval(), 0ns);
  m.on_completion(t0, 2, 2);  // the first completion: no interval before it
  EXPECT_EQ(m.interval(), 0ns);
  m.on_completion(t0 + 100us, 1, 2);  // saturated since the first: a sample
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_EQ(m.interval(), 100us);
}

TEST(service_meter, ignores_an_interval_that_began_with_an_idle_worker) {
  service_meter m;
  m.on_completion(t0, 1, 2);  // one worker idle afterwards: the gap measures arrivals, not service
  m.on_completion(t0 + 50ms, 5, 2);
  EXPECT_EQ(m.samples(), 0u);
  EXPECT_EQ(m.interval(), 0ns);
  m.on_completion(t0 + 50ms + 200us, 4, 2);  // saturated since the last one
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_EQ(m.interval(), 200us);
}

TEST(service_meter, batched_completions_average_to_time_per_completion) {
  // The host, busy for 800 us, sees 8 completions at once: one long gap, seven near 0.
  service_meter m;
  time_point now = t0;
  m.on_completion(now, 10, 2);
  for (int batch = 0; batch < 4; ++batch) {
    now += 800us;
    for (int i = 0; i < 8; ++i) m.on_completion(now, 10, 2);
  }
  EXPECT_EQ(m.samples(), 32u);
  EXPECT_EQ(m.interval(), 100us);  // 3.2 ms / 32
}

TEST(service_meter, only_the_last_window_counts) {
  service_meter m;
  time_point now = t0;
  m.on_completion(now, 4, 2);
  for (std::size_t i = 0; i < service_meter::window; ++i) m.on_completion(now += 1ms, 4, 2);
  EXPECT_EQ(m.interval(), 1ms);
  for (std::size_t i = 0; i < service_meter::window / 2; ++i) m.on_completion(now += 3ms, 4, 2);
  EXPECT_EQ(m.interval(), 2ms);  // half 1 ms, half 3 ms
  for (std::size_t i = 0; i < service_meter::window / 2; ++i) m.on_completion(now += 3ms, 4, 2);
  EXPECT_EQ(m.interval(), 3ms);
  EXPECT_EQ(m.samples(), 2 * service_meter::window);
}

// ---- the two measured cases ----------------------------------------------------------------

// Host and 2 workers share one CPU at 80% of its capacity. A worker preempted in the middle
// of a 76 us call reports several ms of wall time, and the pool's per-call estimate jumps
// to 5 ms; 120 calls ahead. The old rule, ahead / threads x call time, said 300 ms and
// refused. The pool was in fact finishing a call every 90 us, which the meter sees even
// though the host, sharing the CPU, collects the completions in bursts.
TEST(admission, oversubscribed_workers_are_judged_by_their_throughput) {
  const admission_policy policy{250ms, 4096};
  const auto inflated_call_time = 5ms;
  EXPECT_EQ(decide_admission({120, 2, inflated_call_time, 0ns}, policy), admission::reject_delay);

  service_meter m;
  time_point now = t0;
  m.on_completion(now, 120, 2);
  for (int burst = 0; burst < 16; ++burst) {
    now += 360us;  // 4 calls' worth of CPU while the host waited for its slice
    for (int i = 0; i < 4; ++i) m.on_completion(now, 120, 2);
  }
  EXPECT_EQ(m.interval(), 90us);
  const queue_state q{120, 2, inflated_call_time, m.interval()};
  EXPECT_EQ(expected_wait(q), 119 * 90us);  // 10.7 ms, not 300 ms
  EXPECT_EQ(decide_admission(q, policy), admission::accept);
}

// A flood at 3x the pool's capacity: a completion every 340 us (the host answering refusals
// takes CPU from the workers), and the queue keeps growing. The meter must still let the
// rule refuse once the wait passes 250 ms, i.e. beyond 736 calls ahead with 2 workers.
TEST(admission, a_flood_is_refused_once_the_measured_wait_passes_the_limit) {
  const admission_policy policy{250ms, 4096};
  service_meter m;
  time_point now = t0;
  std::size_t pending = 600;
  m.on_completion(now, pending, 2);
  for (std::size_t i = 0; i < 2 * service_meter::window; ++i) {
    pending += 2;  // three arrivals per completion
    m.on_completion(now += 340us, pending, 2);
  }
  ASSERT_EQ(m.interval(), 340us);
  EXPECT_EQ(decide_admission({736, 2, 76us, m.interval()}, policy), admission::accept);
  EXPECT_EQ(decide_admission({737, 2, 76us, m.interval()}, policy), admission::reject_delay);
  EXPECT_EQ(decide_admission({1000, 2, 76us, m.interval()}, policy), admission::reject_delay);
}

}  // namespace
}  // namespace knit_server
