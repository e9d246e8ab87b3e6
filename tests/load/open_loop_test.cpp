// Tests for the open-loop schedule and driver: intended times, pooling, CO correction.
#include <gtest/gtest.h>

#include <vector>

#include "connection.hpp"
#include "open_loop.hpp"
#include "stats.hpp"

using namespace knit_load;

namespace {

struct sent_request {
  client_connection* c;
  nanos intended;
  nanos now;
};

class recording_sink final : public request_sink {
 public:
  void send(client_connection& c, nanos intended, nanos now) override {
    sent.push_back({&c, intended, now});
  }
  std::vector<sent_request> sent;
};

constexpr nanos kT0 = 1'000'000'000'000;

}  // namespace

TEST(open_loop_schedule, IntendedTimesFollowRate) {
  open_loop_schedule s(2000.0, kT0);
  EXPECT_EQ(s.intended(0), kT0);
  EXPECT_EQ(s.intended(1), kT0 + 500'000);
  EXPECT_EQ(s.intended(2000), kT0 + kNanosPerSecond);
  EXPECT_EQ(s.intended(30000), kT0 + 15 * kNanosPerSecond);
  open_loop_schedule odd(3.0, kT0);
  EXPECT_EQ(odd.intended(1), kT0 + 333'333'333);
  EXPECT_EQ(odd.intended(3), kT0 + kNanosPerSecond);
}

TEST(open_loop_schedule, DueBeforeAgreesWithIntended) {
  for (double rate : {1.0, 3.0, 7.5, 2000.0, 123456.7}) {
    open_loop_schedule s(rate, kT0);
    for (nanos dt : {nanos{0}, nanos{1}, nanos{499'999}, nanos{500'000}, nanos{500'001},
                     kNanosPerSecond, 15 * kNanosPerSecond + 3}) {
      const std::uint64_t n = s.due_before(kT0 + dt);
      if (n > 0) {
        EXPECT_LT(s.intended(n - 1), kT0 + dt);
      }
      EXPECT_GE(s.intended(n), kT0 + dt);
    }
  }
}

TEST(open_loop_schedule, TakeAndBacklog) {
  open_loop_schedule s(1000.0, kT0);
  EXPECT_TRUE(s.due(kT0));
  EXPECT_FALSE(s.due(kT0 - 1));
  EXPECT_EQ(s.take(), kT0);
  EXPECT_EQ(s.take(), kT0 + 1'000'000);
  EXPECT_EQ(s.taken(), 2u);
  // Due before t0+10ms: requests 0..9; two taken.
  EXPECT_EQ(s.backlog(kT0 + 10'000'000), 8u);
  EXPECT_EQ(s.backlog(kT0 + 1'500'000), 0u);
}

TEST(open_loop_driver, SendsOnIdleConnectionsAtIntendedTimes) {
  recording_sink sink;
  open_loop_driver d(sink, 1000.0);  // one every 1 ms
  d.start(kT0);
  client_connection a(-1, nullptr), b(-1, nullptr);
  d.on_ready(a, kT0);  // request 0 is due at t0: goes out at once
  ASSERT_EQ(sink.sent.size(), 1u);
  EXPECT_EQ(sink.sent[0].intended, kT0);
  d.on_ready(b, kT0 + 100);  // nothing due: parked
  EXPECT_EQ(sink.sent.size(), 1u);
  EXPECT_EQ(d.idle_connections(), 1u);
  EXPECT_EQ(d.next_deadline(), kT0 + 1'000'000);
  d.dispatch(kT0 + 999'999);
  EXPECT_EQ(sink.sent.size(), 1u);
  d.dispatch(kT0 + 1'000'010);
  ASSERT_EQ(sink.sent.size(), 2u);
  EXPECT_EQ(sink.sent[1].c, &b);
  EXPECT_EQ(sink.sent[1].intended, kT0 + 1'000'000);
  EXPECT_EQ(d.next_deadline(), kNever);  // no idle connection left to schedule for
}

TEST(open_loop_driver, BacklogWaitsForAConnectionAndKeepsIntendedTime) {
  recording_sink sink;
  open_loop_driver d(sink, 1000.0);
  d.start(kT0);
  client_connection a(-1, nullptr);
  d.on_ready(a, kT0);
  // The only connection is busy for 5 ms; requests 1..4 fall due meanwhile.
  d.dispatch(kT0 + 5'000'000);
  EXPECT_EQ(sink.sent.size(), 1u);
  EXPECT_EQ(d.backlog(kT0 + 5'000'000), 4u);
  d.on_ready(a, kT0 + 5'000'000);
  ASSERT_EQ(sink.sent.size(), 2u);
  // Sent late, but its latency still counts from when it was due.
  EXPECT_EQ(sink.sent[1].intended, kT0 + 1'000'000);
  EXPECT_EQ(sink.sent[1].now, kT0 + 5'000'000);
  for (const sent_request& s : sink.sent) EXPECT_LE(s.intended, s.now);
}

TEST(open_loop_driver, LostConnectionLeavesThePool) {
  recording_sink sink;
  open_loop_driver d(sink, 10.0);
  d.start(kT0);
  client_connection a(-1, nullptr);
  d.on_ready(a, kT0 - 1);
  EXPECT_EQ(d.idle_connections(), 1u);
  d.on_lost(a);
  EXPECT_EQ(d.idle_connections(), 0u);
  d.dispatch(kT0 + kNanosPerSecond);
  EXPECT_TRUE(sink.sent.empty());
}

TEST(open_loop, CorrectedLatencyIsAtLeastUncorrected) {
  recording_sink sink;
  open_loop_driver d(sink, 1000.0);
  d.start(kT0);
  client_connection a(-1, nullptr), b(-1, nullptr);
  route_load_stats stats;
  // Two connections, each response takes 3 ms: the schedule (1 ms) outruns them.
  d.on_ready(a, kT0);
  d.on_ready(b, kT0);
  nanos now = kT0;
  for (std::size_t i = 0; i < sink.sent.size() && i < 200; ++i) {
    const sent_request s = sink.sent[i];
    now = std::max(now, s.now) + 3'000'000;
    stats.record_response(200, s.intended, s.now, now);
    d.on_ready(*s.c, now);
  }
  ASSERT_GE(stats.requests, 100u);
  for (double p : {50.0, 90.0, 99.0, 100.0}) {
    EXPECT_GE(stats.latency.percentile(p), stats.uncorrected.percentile(p)) << p;
  }
  // Falling behind shows up only in the corrected figure.
  EXPECT_GT(stats.latency.percentile(99), 10 * stats.uncorrected.percentile(99));
}

TEST(open_loop, RateMetFlag) {
  EXPECT_TRUE(open_loop_rate_met(2000, 1999.8, 0));
  EXPECT_TRUE(open_loop_rate_met(2000, 1980.0, 0));
  EXPECT_FALSE(open_loop_rate_met(2000, 1979.0, 0));
  EXPECT_FALSE(open_loop_rate_met(2000, 2000.0, 3));
}
