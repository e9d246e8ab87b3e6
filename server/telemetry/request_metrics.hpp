// request_metrics: one event loop's responses by route and status code, and their latency
// histogram by route (fixed bounds), counted without locks and summed when /metrics is scraped.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "http/router.hpp"

namespace knit_server {

// The status codes the server answers, each counted apart; anything else counts as "other".
inline constexpr std::array<unsigned, 8> kCountedCodes = {200, 400, 404, 413, 431, 500, 503, 504};
inline constexpr std::size_t kCodeSlots = kCountedCodes.size() + 1;  // + "other"

// The latency histogram's upper bounds (le), in nanoseconds and as the label writes them, in
// seconds: 5 µs to 10 s, 1-2.5-5 per decade; a last bucket (+Inf) takes the rest. The four
// below 100 µs are there for the routes answered on the event loop (/ping, the ops endpoints):
// with 100 µs as the first bound 97% of /ping's latencies fell in it, so a quantile was a
// guess inside one bucket. Fixed, so every instance's histograms add up in a fleet. Memory:
// 8 bytes a bucket, 21 buckets per route, 7 routes: 1176 bytes per shard (1 shard per event
// loop; 64 in KNIT_MODE=multi), whatever the traffic; a whole shard, with the codes and the
// sums, is 7 x (9 + 21 + 1) x 8 = 1736 bytes (1792 with its cache-line padding).
inline constexpr std::array<std::uint64_t, 20> kLatencyBoundsNs = {
    5'000,       10'000,        25'000,        50'000,        100'000,
    250'000,     500'000,       1'000'000,     2'500'000,     5'000'000,
    10'000'000,  25'000'000,    50'000'000,    100'000'000,   250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
inline constexpr std::array<std::string_view, 20> kLatencyBoundLabels = {
    "0.000005", "0.00001", "0.000025", "0.00005", "0.0001", "0.00025", "0.0005",
    "0.001",    "0.0025",  "0.005",    "0.01",    "0.025",  "0.05",    "0.1",
    "0.25",     "0.5",     "1",        "2.5",     "5",      "10"};

// A label's value in nanoseconds ("0.000025" -> 25000), to check the two lists agree.
constexpr std::uint64_t label_ns(std::string_view label) noexcept {
  std::uint64_t whole = 0, fraction = 0, scale = 1'000'000'000;
  bool after_point = false;
  for (char c : label) {
    if (c == '.') {
      after_point = true;
    } else if (after_point) {
      scale /= 10;
      fraction += static_cast<std::uint64_t>(c - '0') * scale;
    } else {
      whole = whole * 10 + static_cast<std::uint64_t>(c - '0');
    }
  }
  return whole * 1'000'000'000 + fraction;
}

constexpr bool latency_bounds_consistent() noexcept {
  for (std::size_t i = 0; i < kLatencyBoundsNs.size(); ++i) {
    if (label_ns(kLatencyBoundLabels[i]) != kLatencyBoundsNs[i]) return false;
    if (i > 0 && kLatencyBoundsNs[i] <= kLatencyBoundsNs[i - 1]) return false;
  }
  return true;
}
static_assert(latency_bounds_consistent(), "each label must be its bound, bounds rising");

inline constexpr std::size_t kLatencyBuckets = kLatencyBoundsNs.size() + 1;  // + "+Inf"

// The slot of `status` in kCountedCodes, or kCountedCodes.size() for "other".
constexpr std::size_t code_slot(unsigned status) noexcept {
  for (std::size_t i = 0; i < kCountedCodes.size(); ++i) {
    if (kCountedCodes[i] == status) return i;
  }
  return kCountedCodes.size();
}

// The bucket of a duration: the first bound it does not exceed, else the last (+Inf).
constexpr std::size_t latency_bucket(std::uint64_t ns) noexcept {
  for (std::size_t i = 0; i < kLatencyBoundsNs.size(); ++i) {
    if (ns <= kLatencyBoundsNs[i]) return i;
  }
  return kLatencyBoundsNs.size();
}

// Plain sums, read from one or more request_metrics (every host's, for a process total).
// Buckets are per bucket here (not cumulative); the exposition makes them cumulative.
struct request_totals {
  std::array<std::array<std::uint64_t, kCodeSlots>, kRouteCount> responses{};
  std::array<std::array<std::uint64_t, kLatencyBuckets>, kRouteCount> buckets{};
  std::array<std::uint64_t, kRouteCount> sum_ns{};

  // The route's responses, every code: equal to its histogram's count.
  std::uint64_t count(route r) const noexcept;
};

// Threads: with one thread per event loop (every mode but multi) that thread alone writes,
// so an increment is a relaxed load and store of its own counter, no read-modify-write: a
// plain add on x86. In KNIT_MODE=multi the N io threads share the server, so each thread
// counts in a shard of its own (by a process-wide thread number, on its own cache lines)
// with a relaxed fetch_add, uncontended unless more threads than kMaxShards count at once
// (then two share a shard, still exact). A scrape reads every shard relaxed and adds up: a
// total, not a snapshot consistent across counters (a request being counted may show in
// its code's count a moment before its bucket's).
class request_metrics {
 public:
  static constexpr std::size_t kMaxShards = 64;

  // `shared_by_threads`: KNIT_MODE=multi (io_threading::multi()).
  explicit request_metrics(bool shared_by_threads);

  // One response, written (or failed) `ns` after its request was read whole.
  void record(route r, unsigned status, std::uint64_t ns) noexcept;

  // Adds every shard's counts to `out`. Any thread.
  void add_to(request_totals& out) const noexcept;

 private:
  using counter = std::atomic<std::uint64_t>;
  struct alignas(64) shard {
    std::array<std::array<counter, kCodeSlots>, kRouteCount> responses{};
    std::array<std::array<counter, kLatencyBuckets>, kRouteCount> buckets{};
    std::array<counter, kRouteCount> sum_ns{};
  };
  // The size the bounds note states, padded to whole cache lines: 1792 bytes a shard.
  static_assert(sizeof(shard) ==
                (kRouteCount * (kCodeSlots + kLatencyBuckets + 1) * 8 + 63) / 64 * 64);

  bool shared_;
  std::size_t shard_count_;
  std::unique_ptr<shard[]> shards_;
};

}  // namespace knit_server
