// job_ring<T>: a bounded ring with ONE producer (the host) and consumers that claim slots
// with a CAS on the head (the owning worker, and thieves when stealing is on).
//
// Protocol (K slots, a power of two; index i lives in slot i mod K; each slot holds a
// sequence beside its value, so a consumer reads one line: the slot it expects next)
//   producer (host, one thread):
//     t = tail (own variable); if t - cached_head == K: reload head (acquire); still K -> full
//     slot.value = v (relaxed atomic store); slot.seq = t + 1 (release); tail = t + 1
//   consumer (owner or thief, any number):
//     h = head (acquire)
//     s = slot(h).seq (acquire): s < h + 1 -> empty (index h not pushed yet);
//       s > h + 1 -> h is stale (the slot already holds index h + K, so head passed h):
//       reload head and look again
//     v = slot.value (relaxed atomic load); CAS head h -> h + 1 (acq_rel)
//     success -> v is ours; failure -> another consumer took h, retry with the new head
//   producer, told by its own channel that a value it pushed was taken (the pool: the
//   call's record came back through the host's done ring or list, after the taker's CAS):
//     taken_known += 1; cached_head = max(cached_head, taken_known)   (no shared access)
// Guarantee: every pushed value is returned by exactly one successful try_pop.
// Invariant: cached_head <= head <= tail. A value known taken was claimed by a CAS, so head
// is at least the number known taken; and the CAS that took the newest of them happens
// before the producer learns it (the consumer's release, the producer's acquire), as does
// every CAS before it in head's order (acq_rel RMWs): the slots below are free to rewrite.
// Why seq == h + 1 names index h's value: the slot of index h is written again only for
// index h + K, after the producer has seen head > h; before index h is pushed it holds
// index h - K's sequence or 0, both below h + 1. So a consumer sees h + 1 only once index
// h is published (the release and acquire on seq order the value before it).
// Why the value load before the CAS is safe: the producer rewrites slot (h mod K) only for
// index h + K, which it does only after it has seen head > h, i.e. after the CAS that
// consumed h. If our CAS succeeds, ours was that CAS, so our earlier load read index h's
// value. If it fails the value is discarded. Slots are atomics so that losing race is not a
// data race (and ThreadSanitizer agrees).
// Head, tail and sequences are 64-bit counters, never wrapped in practice: the CAS has no ABA.
// Why a sequence per slot and not a shared tail: a consumer that read the tail and then the
// slot fetched two lines the producer had just written, one after the other (the tail's
// verdict decides whether the slot is read); the sequence makes it one. 16 bytes a slot
// instead of 8; the back-to-back round trip 0.87-0.94x of the tail's in 6 pairs
// (bench/results/job-ring-seq-2026-12-07).
//
// Probe (a test's): Probe::at(job_ring_point) runs at the consumer's windows named below,
// so a test can make another consumer and the producer act inside them every time
// (tests/core/job_ring_interleaving_test.cpp). The default does nothing and costs nothing.
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

/// @brief The consumer's windows a test's probe can act in (job_ring's Probe).
enum class job_ring_point {
  head_loaded,   // a consumer has read the head, not yet its slot's sequence
  value_loaded,  // a consumer has read index h's value, not yet claimed it with the CAS
};

/// @brief job_ring's default probe: nothing, inlined away.
struct job_ring_no_probe {
  /// Does nothing at any window.
  static void at(job_ring_point) noexcept {}
};

/// @brief Bounded ring with one producer (the host) and any number of CAS-claiming
/// consumers (the owning worker, and thieves when stealing is on): the host -> worker ring.
///
/// The protocol, and why its slot load before the CAS is safe, open knit/job_ring.hpp.
/// @tparam T a small trivially copyable type with lock-free atomics (the pool uses pointers).
/// @tparam Probe tests only: Probe::at(job_ring_point) runs inside the consumer's windows.
template <class T, class Probe = job_ring_no_probe>
class job_ring {
  static_assert(std::is_trivially_copyable_v<T>,
                "job_ring carries small trivially copyable values (pointers)");
  static_assert(std::atomic<T>::is_always_lock_free, "job_ring needs lock-free atomics of T");

  struct slot {
    // Writer: the producer (release, after value). Partner: the consumers' acquire loads.
    std::atomic<std::uint64_t> seq{0};
    std::atomic<T> value{};  // written before seq's release, read after its acquire
  };

 public:
  /// Bytes one slot takes (the memory formula's per-slot term).
  static constexpr std::size_t kSlotBytes = sizeof(slot);

  /// A ring of `capacity` slots, rounded up to a power of two.
  /// @throws std::invalid_argument if `capacity` is 0.
  explicit job_ring(std::size_t capacity)
      : capacity_(std::bit_ceil(capacity < 1 ? std::size_t{1} : capacity)),
        mask_(capacity_ - 1),
        slots_(std::make_unique<slot[]>(capacity_)) {
    if (capacity == 0) throw std::invalid_argument("job_ring capacity must be at least 1");
  }

  job_ring(const job_ring&) = delete;
  job_ring& operator=(const job_ring&) = delete;

  /// Producer only. Returns false when full (the value stays with the caller).
  bool try_push(T value) noexcept {
    const std::uint64_t t = tail_;
    if (t - cached_head_ >= capacity_) {
      cached_head_ = head_.load(std::memory_order_acquire);  // pairs with the consumers' CAS
      if (t - cached_head_ >= capacity_) return false;
    }
    slot& s = slots_[t & mask_];
    s.value.store(value, std::memory_order_relaxed);
    // Publishes the value; pairs with the consumers' acquire loads of seq.
    s.seq.store(t + 1, std::memory_order_release);
    tail_ = t + 1;
    return true;
  }

  /// Any thread. Claims the oldest value into `out`; returns false when empty. (A head
  /// read stale while other consumers raced may also say empty; a caller that must not
  /// miss a push re-checks with empty_approx after a seq_cst fence, as a worker does
  /// before it parks.)
  bool try_pop(T& out) noexcept {
    std::uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      Probe::at(job_ring_point::head_loaded);
      const slot& s = slots_[h & mask_];
      const std::uint64_t seq = s.seq.load(std::memory_order_acquire);
      if (seq != h + 1) {
        if (seq < h + 1) return false;              // index h not pushed yet
        h = head_.load(std::memory_order_acquire);  // stale: the slot holds index h + K
        continue;
      }
      const T value = s.value.load(std::memory_order_relaxed);
      Probe::at(job_ring_point::value_loaded);
      // acq_rel: release orders our value load before the producer's reuse of the slot.
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        out = value;
        return true;
      }
    }
  }

  /// Any thread: the ring held no value when looked at. Reads the head and the slot it
  /// names, as try_pop does, never the producer's tail. After a seq_cst fence it sees a
  /// push whose own fence came after it (the pool's park and wake checks rely on that).
  bool empty_approx() const noexcept {
    std::uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      Probe::at(job_ring_point::head_loaded);
      const std::uint64_t seq = slots_[h & mask_].seq.load(std::memory_order_acquire);
      if (seq == h + 1) return false;
      if (seq < h + 1) return true;
      h = head_.load(std::memory_order_acquire);  // stale, as in try_pop
    }
  }

  /// Producer only: a value this producer pushed is known to have been taken, through a
  /// channel that orders it after the taker's CAS (its reply). Counts it into the cached
  /// head, so a ring the producer knows to be empty costs producer_size() no read of the
  /// consumers' line: that read, on every push, puts the line the consumer's next CAS
  /// must own back into the producer's cache (11% of a back-to-back round trip here).
  /// Returns false, counting nothing, if that would count more values than were pushed
  /// (the caller's bug: a cached head past the real one would let a push overwrite a slot
  /// nobody took).
  [[nodiscard]] bool producer_saw_taken() noexcept {
    if (taken_known_ >= tail_) return false;
    ++taken_known_;
    if (taken_known_ > cached_head_) cached_head_ = taken_known_;
    return true;
  }

  /// Producer only: depth seen through the producer's cached head, refreshed only when the
  /// cache says "non-empty" (so an empty ring, or one whose values producer_saw_taken
  /// accounted for, costs no remote cache-line read).
  std::size_t producer_size() noexcept {
    const std::uint64_t t = tail_;
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
  // Producer-private, on the producer's line: the next index to push (the slots'
  // sequences publish the values, so no consumer reads it).
  alignas(detail::kCacheLine) std::uint64_t tail_ = 0;
  std::uint64_t cached_head_ = 0;  // producer-private copy of head_
  // Producer-private: how many of its values it knows were taken (producer_saw_taken).
  std::uint64_t taken_known_ = 0;
  alignas(detail::kCacheLine) const std::size_t capacity_;
  const std::size_t mask_;
  std::unique_ptr<slot[]> slots_;
};

}  // namespace knit
