// spsc_ring<T>: bounded single-producer/single-consumer ring (rigtorp layout): head and tail
// on separate cache lines, each side caches the other's index so a push or pop usually
// touches only its own line.
//
// Protocol
//   producer: t = tail (own); if t - cached_head == capacity: cached_head = head (acquire)
//             slot[t & mask] = v; tail = t + 1 (release)
//   consumer: h = head (own); if h == cached_tail: cached_tail = tail (acquire)
//             v = move(slot[h & mask]); head = h + 1 (release)
// Guarantee: values come out once each, in order. The release store of one side's index
// publishes the slot it just wrote (producer) or freed (consumer) to the other side.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "knit/detail/cache_line.hpp"

namespace knit {

/// @brief Bounded single-producer/single-consumer ring: the worker -> host completion ring.
///
/// One thread pushes, one thread pops; the protocol opens knit/spsc_ring.hpp.
/// @tparam T the element type (moved in and out).
template <class T>
class spsc_ring {
 public:
  /// A ring of `capacity` slots, rounded up to a power of two.
  /// @throws std::invalid_argument if `capacity` is 0.
  explicit spsc_ring(std::size_t capacity)
      : capacity_(std::bit_ceil(capacity < 1 ? std::size_t{1} : capacity)),
        mask_(capacity_ - 1),
        slots_(std::make_unique<std::optional<T>[]>(capacity_)) {
    if (capacity == 0) throw std::invalid_argument("spsc_ring capacity must be at least 1");
  }

  spsc_ring(const spsc_ring&) = delete;
  spsc_ring& operator=(const spsc_ring&) = delete;

  /// Producer only. Moves `value` in; returns false when full, `value` left untouched then.
  bool try_push(T&& value) {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);  // only the producer writes it
    if (t - producer_cached_head_ >= capacity_) {
      producer_cached_head_ =
          head_.load(std::memory_order_acquire);  // pairs with try_pop's release
      if (t - producer_cached_head_ >= capacity_) return false;
    }
    slots_[t & mask_].emplace(std::move(value));
    tail_.store(t + 1,
                std::memory_order_release);  // publishes the slot; pairs with try_pop's acquire
    return true;
  }
  /// Producer only. Pushes a copy of `value`; returns false when full.
  bool try_push(const T& value) {
    T copy(value);
    return try_push(std::move(copy));
  }

  /// Producer only: true if the next try_push cannot fail (the consumer only frees slots,
  /// so room seen now stays until the producer itself pushes).
  bool producer_has_room() noexcept {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    if (t - producer_cached_head_ < capacity_) return true;
    producer_cached_head_ = head_.load(std::memory_order_acquire);  // pairs with try_pop's release
    return t - producer_cached_head_ < capacity_;
  }

  /// Consumer only. Moves the oldest value into `out`; returns false when empty.
  bool try_pop(T& out) {
    const std::uint64_t h = head_.load(std::memory_order_relaxed);  // only the consumer writes it
    if (h == consumer_cached_tail_) {
      consumer_cached_tail_ =
          tail_.load(std::memory_order_acquire);  // pairs with try_push's release
      if (h == consumer_cached_tail_) return false;
    }
    auto& slot = slots_[h & mask_];
    out = std::move(*slot);
    slot.reset();
    head_.store(h + 1, std::memory_order_release);  // frees the slot; pairs with try_push's acquire
    return true;
  }

  /// Values in the ring. Either side; approximate while the other side runs.
  std::size_t size_approx() const noexcept {
    const std::uint64_t h = head_.load(std::memory_order_acquire);
    const std::uint64_t t = tail_.load(std::memory_order_acquire);
    return t > h ? static_cast<std::size_t>(t - h) : 0;
  }
  /// Slots in the ring (the constructor's capacity rounded up to a power of two).
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  alignas(detail::kCacheLine) std::atomic<std::uint64_t> head_{
      0};  // consumer writes, producer reads
  alignas(detail::kCacheLine) std::uint64_t consumer_cached_tail_ = 0;  // consumer-private
  alignas(detail::kCacheLine) std::atomic<std::uint64_t> tail_{
      0};  // producer writes, consumer reads
  alignas(detail::kCacheLine) std::uint64_t producer_cached_head_ = 0;  // producer-private
  alignas(detail::kCacheLine) const std::size_t capacity_;
  const std::size_t mask_;
  std::unique_ptr<std::optional<T>[]> slots_;
};

}  // namespace knit
