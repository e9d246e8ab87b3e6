// Tests for the log-bucketed latency histogram: precision, percentiles, merging.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "histogram.hpp"

using knit_load::latency_histogram;

namespace {

double rel_err(double got, double want) { return std::abs(got - want) / want; }

}  // namespace

TEST(latency_histogram, BucketMidpointWithinOnePercentFrom1usTo60s) {
  // Geometric sweep from 1 us to 60 s, plus the values either side of every power of two.
  for (double v = 1e3; v <= 60e9; v *= 1.0007) {
    const auto value = static_cast<std::uint64_t>(v);
    const std::size_t b = latency_histogram::bucket_of(value);
    ASSERT_LE(latency_histogram::bucket_low(b), value);
    ASSERT_LT(value, latency_histogram::bucket_high(b));
    const double mid = static_cast<double>(latency_histogram::bucket_mid(b));
    ASSERT_LE(rel_err(mid, static_cast<double>(value)), 0.01) << value;
  }
  for (int k = 10; k < 36; ++k) {
    for (std::uint64_t value :
         {(std::uint64_t{1} << k) - 1, std::uint64_t{1} << k, (std::uint64_t{1} << k) + 1}) {
      const std::size_t b = latency_histogram::bucket_of(value);
      const double mid = static_cast<double>(latency_histogram::bucket_mid(b));
      EXPECT_LE(rel_err(mid, static_cast<double>(value)), 0.01) << value;
    }
  }
}

TEST(latency_histogram, BucketsAreContiguousAndOrdered) {
  for (std::size_t b = 0; b + 1 < latency_histogram::kBucketCount; ++b) {
    ASSERT_EQ(latency_histogram::bucket_high(b), latency_histogram::bucket_low(b + 1)) << b;
    ASSERT_EQ(latency_histogram::bucket_of(latency_histogram::bucket_low(b)), b);
    ASSERT_EQ(latency_histogram::bucket_of(latency_histogram::bucket_high(b) - 1), b);
  }
}

TEST(latency_histogram, SmallValuesAreExact) {
  for (std::uint64_t v = 0; v < 128; ++v) {
    EXPECT_EQ(latency_histogram::bucket_mid(latency_histogram::bucket_of(v)), v);
  }
}

TEST(latency_histogram, PercentileOfSingleValueIsThatValue) {
  for (double v = 1e3; v <= 60e9; v *= 1.37) {
    latency_histogram h;
    const auto value = static_cast<std::uint64_t>(v);
    h.record(value);
    // Clamped to [min, max], so a single sample is reported exactly.
    EXPECT_EQ(h.percentile(50), value);
    EXPECT_EQ(h.percentile(99.9), value);
  }
}

TEST(latency_histogram, PercentilesOfUniform1To100000WithinOnePercent) {
  latency_histogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.record(v * 1000);  // 1 us .. 100 ms
  EXPECT_EQ(h.count(), 100000u);
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) {
    const double want = p / 100.0 * 100000.0 * 1000.0;
    EXPECT_LE(rel_err(static_cast<double>(h.percentile(p)), want), 0.01) << "p" << p;
  }
  EXPECT_EQ(h.max(), 100000u * 1000u);
  EXPECT_EQ(h.min(), 1000u);
  EXPECT_EQ(h.percentile(100), h.max());
  EXPECT_NEAR(h.mean(), 50000.5 * 1000, 1.0);
}

TEST(latency_histogram, PercentilesOfExponentialWithinOnePercent) {
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> dist(1.0 / 5e6);  // mean 5 ms
  std::vector<std::uint64_t> values;
  latency_histogram h;
  for (int i = 0; i < 200000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(rng)) + 1000;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * values.size()));
    const double want = static_cast<double>(values[rank - 1]);
    EXPECT_LE(rel_err(static_cast<double>(h.percentile(p)), want), 0.01) << "p" << p;
  }
  EXPECT_EQ(h.max(), values.back());
}

TEST(latency_histogram, MergeEqualsRecordingIntoOne) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> dist(500, 70'000'000'000ULL);
  latency_histogram a, b, both;
  for (int i = 0; i < 50000; ++i) {
    const std::uint64_t v = dist(rng);
    (i % 3 == 0 ? a : b).record(v);
    both.record(v);
  }
  latency_histogram merged;
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged, both);
  EXPECT_EQ(merged.count(), 50000u);
  EXPECT_EQ(merged.percentile(99), both.percentile(99));
  EXPECT_EQ(merged.max(), both.max());
  EXPECT_EQ(merged.min(), both.min());
}

TEST(latency_histogram, MaxIsExactAndHugeValuesClamp) {
  latency_histogram h;
  h.record(1'234'567);
  h.record(987'654'321'123ULL);      // ~16 minutes
  h.record(std::uint64_t{1} << 50);  // beyond the bucket range
  EXPECT_EQ(h.max(), std::uint64_t{1} << 50);
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.percentile(1), 1'234'567u);
}

TEST(latency_histogram, EmptyIsZero) {
  latency_histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
}
