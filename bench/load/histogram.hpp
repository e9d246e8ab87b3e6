// Log-bucketed latency histogram (HdrHistogram-like): < 0.4% relative error, mergeable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace knit_load {

// Values are nanoseconds. Each power of two [2^k, 2^(k+1)) is split into 128 equal
// sub-buckets, so a bucket is at most 1/128 of its lower bound wide; reporting the bucket
// midpoint keeps the error under 1/256 (0.39%). Values below 128 ns get exact buckets.
// The range reaches 2^40 ns (~18 minutes); anything larger lands in the last bucket,
// while min/max are kept exactly.
class latency_histogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr std::uint64_t kSubCount = std::uint64_t{1} << kSubBits;
  static constexpr int kMaxExponent = 40;
  static constexpr std::size_t kBucketCount = kSubCount + (kMaxExponent - kSubBits) * kSubCount;

  latency_histogram();

  void record(std::uint64_t value) { record_n(value, 1); }
  void record_n(std::uint64_t value, std::uint64_t n);
  // Adds every sample of `other`, as if they had been recorded here.
  void merge(const latency_histogram& other);
  void clear();

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  std::uint64_t max() const { return max_; }
  double mean() const;
  // Value at or below which p percent of the samples lie (p in [0, 100]): the midpoint of
  // the bucket holding the ceil(p/100 * count)-th smallest sample, clamped to [min, max].
  // 0 for an empty histogram.
  std::uint64_t percentile(double p) const;

  static std::size_t bucket_of(std::uint64_t value);
  static std::uint64_t bucket_low(std::size_t bucket);
  // Exclusive upper bound of the bucket.
  static std::uint64_t bucket_high(std::size_t bucket);
  static std::uint64_t bucket_mid(std::size_t bucket);

  friend bool operator==(const latency_histogram&, const latency_histogram&) = default;

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  // Sum of all samples for the mean; 2^64 ns is ~584 years, so it cannot overflow in practice.
  std::uint64_t sum_ = 0;
};

}  // namespace knit_load
