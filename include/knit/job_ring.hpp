// job_ring<T>: a bounded ring with ONE producer (the host) and consumers that claim slots
// with a CAS on the head (the owning worker, and thieves when stealing is on).
//
// Protocol
//   producer (host, one thread):
//     t = tail (own variable); if t - cached_head == capacity: reload head (acquire); full -> false
//     slot[t & mask] = v (relaxed atomic store); tail = t + 1 (release)
//   consumer (owner or thief, any number):
//     h = head (acquire); t = tail (acquire); h == t -> empty
//     v = slot[h & mask] (relaxed atomic load); CAS head h -> h + 1 (acq_rel)
//     success -> v is ours; failure -> another consumer took h, retry with the new head
//   producer, told by its own channel that a value it pushed was taken (the pool: the
//   call's record came back through the host's done ring or list, after the taker's CAS):
//     taken_known += 1; cached_head = max(cached_head, taken_known)   (no shared access)
// Guarantee: every pushed value is returned by exactly one successful try_pop.
// Invariant: cached_head <= head. A value known taken was claimed by a CAS, so head is at
// least the number known taken; and the CAS that took the newest of them happens before
// the producer learns it (the consumer's release, the producer's acquire), as does every
// CAS before it in head's order (acq_rel RMWs): the slots below are free to rewrite.
// Why the slot load before the CAS is safe: the producer rewrites slot (h & mask) only for
// index h + capacity, which it does only after it has seen head > h, i.e. after the CAS that
// consumed h. If our CAS succeeds, ours was that CAS, so our earlier load read index h's
// value. If it fails the value is discarded. Slots are atomics so that losing race is not a
// data race (and ThreadSanitizer agrees).
// Head and tail are 64-bit counters, never wrapped in practice, so the CAS has no ABA.
//
// "Job" here means one queued call: the pool's worker rings carry one call record's
// pointer per slot (knit/call.hpp), host -> worker. The ring itself is generic.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "knit/detail/cache_line.hpp"

namespace knit {

/// @brief Bounded ring with one producer (the host) and any number of CAS-claiming
/// consumers (the owning worker, and thieves when stealing is on): the host -> worker ring.
///
/// The protocol, and why its slot load before the CAS is safe, open knit/job_ring.hpp.
/// @tparam T a small trivially copyable type with lock-free atomics (the pool uses pointers).
template <class T>
class job_ring {
  static_assert(std::is_trivially_copyable_v<T>,
                "job_ring carries small trivially copyable values (pointers)");
  static_assert(std::atomic<T>::is_always_lock_free, "job_ring needs lock-free atomics of T");

 public:
  /// A ring of `capacity` slots, rounded up to a power of two.
  /// @throws std::invalid_argument if `capacity` is 0.
  explicit job_ring(std::size_t capacity)
      : capacity_(std::bit_ceil(capacity < 1 ? std::size_t{1} : capacity)),
        mask_(capacity_ - 1),
        slots_(std::make_unique<std::atomic<T>[]>(capacity_)) {
    if (capacity == 0) throw std::invalid_argument("job_ring capacity must be at least 1");
  }

  job_ring(const job_ring&) = delete;
  job_ring& operator=(const job_ring&) = delete;

  /// Producer only. Returns false when full (the value stays with the caller).
  bool try_push(T value) noexcept {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);  // only the producer writes it
    if (t - cached_head_ >= capacity_) {
      cached_head_ = head_.load(std::memory_order_acquire);  // pairs with the consumers' CAS
      if (t - cached_head_ >= capacity_) return false;
    }
    slots_[t & mask_].store(value, std::memory_order_relaxed);
    // Publishes the slot; pairs with try_pop's acquire.
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }

  /// Any thread. Claims the oldest value into `out`; returns false when empty.
  bool try_pop(T& out) noexcept {
    std::uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      // Pairs with try_push's release.
      const std::uint64_t t = tail_.load(std::memory_order_acquire);
      if (h >= t) return false;
      const T value = slots_[h & mask_].load(std::memory_order_relaxed);
      // acq_rel: release orders our slot load before the producer's reuse of the slot.
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        out = value;
        return true;
      }
    }
  }

  /// Approximate depth; exact when called by the producer with no concurrent consumer.
  std::size_t size_approx() const noexcept {
    const std::uint64_t h = head_.load(std::memory_order_acquire);
    const std::uint64_t t = tail_.load(std::memory_order_acquire);
    return t > h ? static_cast<std::size_t>(t - h) : 0;
  }
  /// size_approx() == 0.
  bool empty_approx() const noexcept { return size_approx() == 0; }

  /// Producer only: a value this producer pushed is known to have been taken, through a
  /// channel that orders it after the taker's CAS (its reply). Counts it into the cached
  /// head, so a ring the producer knows to be empty costs producer_size() no read of the
  /// consumers' line: that read, on every push, puts the line the consumer's next CAS
  /// must own back into the producer's cache (11% of a back-to-back round trip here).
  /// Returns false, counting nothing, if that would count more values than were pushed
  /// (the caller's bug: a cached head past the real one would let a push overwrite a slot
  /// nobody took).
  [[nodiscard]] bool producer_saw_taken() noexcept {
    if (taken_known_ >= tail_.load(std::memory_order_relaxed)) return false;
    ++taken_known_;
    if (taken_known_ > cached_head_) cached_head_ = taken_known_;
    return true;
  }

  /// Producer only: depth seen through the producer's cached head, refreshed only when the
  /// cache says "non-empty" (so an empty ring, or one whose values producer_saw_taken
  /// accounted for, costs no remote cache-line read).
  std::size_t producer_size() noexcept {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    if (t == cached_head_) return 0;
    cached_head_ = head_.load(std::memory_order_acquire);
    return static_cast<std::size_t>(t - cached_head_);
  }

  /// Slots in the ring (the constructor's capacity rounded up to a power of two).
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  // Writers: the consumers (CAS in try_pop). Partners: the other consumers' CAS and loads,
  // and the producer's acquire reload of cached_head_ (a slot is reused only after it).
  alignas(detail::kCacheLine) std::atomic<std::uint64_t> head_{0};
  // Writer: the producer only (release in try_push). Partner: the consumers' acquire load
  // in try_pop (the slot is published with it).
  alignas(detail::kCacheLine) std::atomic<std::uint64_t> tail_{0};
  // Producer-private copy of head_, so a push usually touches no consumer-written line.
  alignas(detail::kCacheLine) std::uint64_t cached_head_ = 0;
  // Producer-private: how many of its values it knows were taken (producer_saw_taken).
  std::uint64_t taken_known_ = 0;
  alignas(detail::kCacheLine) const std::size_t capacity_;
  const std::size_t mask_;
  std::unique_ptr<std::atomic<T>[]> slots_;
};

}  // namespace knit
