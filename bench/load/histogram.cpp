// Log-bucketed latency histogram: bucket arithmetic, merge and percentile walk.
#include "histogram.hpp"

#include <algorithm>
#include <cmath>

namespace knit_load {

latency_histogram::latency_histogram() : counts_(kBucketCount, 0) {}

std::size_t latency_histogram::bucket_of(std::uint64_t value) {
  if (value < kSubCount) return static_cast<std::size_t>(value);
  const int exponent = 63 - __builtin_clzll(value);
  if (exponent >= kMaxExponent) return kBucketCount - 1;
  const int shift = exponent - kSubBits;
  // (value >> shift) is in [128, 256): its low 7 bits pick the linear sub-bucket.
  return static_cast<std::size_t>(kSubCount + static_cast<std::uint64_t>(shift) * kSubCount +
                                  ((value >> shift) - kSubCount));
}

std::uint64_t latency_histogram::bucket_low(std::size_t bucket) {
  if (bucket < kSubCount) return bucket;
  const std::uint64_t shift = (bucket - kSubCount) / kSubCount;
  const std::uint64_t sub = (bucket - kSubCount) % kSubCount;
  return (kSubCount + sub) << shift;
}

std::uint64_t latency_histogram::bucket_high(std::size_t bucket) {
  if (bucket < kSubCount) return bucket + 1;
  const std::uint64_t shift = (bucket - kSubCount) / kSubCount;
  return bucket_low(bucket) + (std::uint64_t{1} << shift);
}

std::uint64_t latency_histogram::bucket_mid(std::size_t bucket) {
  const std::uint64_t low = bucket_low(bucket);
  return low + (bucket_high(bucket) - 1 - low) / 2;
}

void latency_histogram::record_n(std::uint64_t value, std::uint64_t n) {
  if (n == 0) return;
  counts_[bucket_of(value)] += n;
  count_ += n;
  sum_ += value * n;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void latency_histogram::merge(const latency_histogram& other) {
  for (std::size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void latency_histogram::clear() { *this = latency_histogram(); }

double latency_histogram::mean() const {
  return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0;
}

std::uint64_t latency_histogram::percentile(double p) const {
  if (count_ == 0) return 0;
  if (p >= 100.0) return max_;
  if (p <= 0.0) return min_;
  // Nearest-rank definition: the smallest sample with at least p% of samples at or below it.
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(bucket_mid(i), min_, max_);
  }
  return max_;
}

}  // namespace knit_load
