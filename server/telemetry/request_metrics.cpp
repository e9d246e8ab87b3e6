// Counting a response in the calling thread's shard, and adding the shards up.
#include "telemetry/request_metrics.hpp"

namespace knit_server {

namespace {

// A number per thread that counts a request, from 0, for as long as the process lives.
std::size_t this_thread_number() noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

// Single writer: no read-modify-write needed (see the header's threads note).
void add_own(std::atomic<std::uint64_t>& c, std::uint64_t n) noexcept {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace

std::uint64_t request_totals::count(route r) const noexcept {
  std::uint64_t n = 0;
  for (std::uint64_t c : responses[static_cast<std::size_t>(r)]) n += c;
  return n;
}

request_metrics::request_metrics(bool shared_by_threads)
    : shared_(shared_by_threads),
      shard_count_(shared_by_threads ? kMaxShards : 1),
      shards_(std::make_unique<shard[]>(shard_count_)) {}

void request_metrics::record(route r, unsigned status, std::uint64_t ns) noexcept {
  const auto ri = static_cast<std::size_t>(r);
  if (!shared_) {
    shard& s = shards_[0];
    add_own(s.responses[ri][code_slot(status)], 1);
    add_own(s.buckets[ri][latency_bucket(ns)], 1);
    add_own(s.sum_ns[ri], ns);
    return;
  }
  shard& s = shards_[this_thread_number() % shard_count_];
  s.responses[ri][code_slot(status)].fetch_add(1, std::memory_order_relaxed);
  s.buckets[ri][latency_bucket(ns)].fetch_add(1, std::memory_order_relaxed);
  s.sum_ns[ri].fetch_add(ns, std::memory_order_relaxed);
}

void request_metrics::add_to(request_totals& out) const noexcept {
  for (std::size_t i = 0; i < shard_count_; ++i) {
    const shard& s = shards_[i];
    for (std::size_t r = 0; r < kRouteCount; ++r) {
      for (std::size_t c = 0; c < kCodeSlots; ++c) {
        out.responses[r][c] += s.responses[r][c].load(std::memory_order_relaxed);
      }
      for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
        out.buckets[r][b] += s.buckets[r][b].load(std::memory_order_relaxed);
      }
      out.sum_ns[r] += s.sum_ns[r].load(std::memory_order_relaxed);
    }
  }
}

}  // namespace knit_server
