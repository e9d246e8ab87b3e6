// done_ring<T>: a bounded ring with ONE producer (the worker in one seat) and ONE consumer
// (one host): that seat's finished records back to that host, in the order they finished.
// Each slot carries its own sequence, so the consumer polls one line (the slot it expects
// next), never a tail that the producer writes on every push.
//
// Protocol (K slots, a power of two; index i lives in slot i mod K)
//   producer (one thread at a time):
//     t = tail (own variable)
//     if t - cached_head == K: cached_head = head (acquire); still K -> full: false
//     slot.value = v; slot.seq = t + 1 (release); tail = t + 1
//   consumer (one thread at a time):
//     h = next (own variable); slot(h).seq (acquire) != h + 1 -> empty
//     v = slot.value; next = h + 1; head = h + 1 (release)
// Guarantee: every pushed value is popped exactly once, in push order.
// Why: the slot of index h is written again only for index h + K, which the producer does
// only once it has seen head > h (acquire), i.e. after the consumer's release that follows
// its read of index h's value. An empty slot or one still holding index h - K carries
// seq <= h + 1 - K, never h + 1, so the consumer never takes a value before its release.
// Invariants: cached_head <= head <= next == tail once the ring is idle, and
// tail - cached_head <= K.
// Handing either end to another thread (a replaced worker's seat, a host index reused by
// a later thread) needs the old thread's last access to happen before the new one's first:
// the pool makes sure of that (host_state.hpp, "Completions").
// Sequences are 64-bit counters, never wrapped in practice.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "invariant.hpp"
#include "knit/detail/cache_line.hpp"

namespace knit::detail {

template <class T>
class done_ring {
  static_assert(std::is_trivially_copyable_v<T>, "done_ring carries pointers");

 public:
  // Slots per ring: 64 (1 KiB of slots). A burst of 64 calls into one seat fits; past it,
  // the producer's caller falls back to another path (the host's list).
  static constexpr std::size_t kSlots = 64;

  done_ring() : slots_(std::make_unique<slot[]>(kSlots)) {}
  done_ring(const done_ring&) = delete;
  done_ring& operator=(const done_ring&) = delete;

  // Producer only. Returns false when full (the value stays with the caller).
  bool try_push(T value) noexcept {
    const std::uint64_t t = tail_;
    if (t - cached_head_ == kSlots) {
      cached_head_ = head_.load(std::memory_order_acquire);  // pairs with try_pop's release
      KNIT_ASSERT(t - cached_head_ <= kSlots);
      if (t - cached_head_ == kSlots) return false;
    }
    slot& s = slots_[t & kMask];
    s.value = value;
    s.seq.store(t + 1, std::memory_order_release);  // pairs with try_pop's acquire
    tail_ = t + 1;
    return true;
  }

  // Consumer only. Takes the oldest value into `out`; false when empty.
  bool try_pop(T& out) noexcept {
    const std::uint64_t h = next_;
    slot& s = slots_[h & kMask];
    if (s.seq.load(std::memory_order_acquire) != h + 1) return false;
    out = s.value;
    next_ = h + 1;
    head_.store(h + 1, std::memory_order_release);  // the slot is the producer's again
    return true;
  }

  // Consumer only: the value try_pop would return next, or null when there is none (T a
  // pointer): a hint to fetch what it points at before it is needed.
  T peek() const noexcept {
    const std::uint64_t h = next_;
    const slot& s = slots_[h & kMask];
    if (s.seq.load(std::memory_order_acquire) != h + 1) return T{};
    return s.value;
  }

  // Bytes one ring holds (the memory formula's per-ring term).
  static constexpr std::size_t bytes() noexcept {
    return sizeof(done_ring) + kSlots * sizeof(slot);
  }

 private:
  static constexpr std::size_t kMask = kSlots - 1;
  static_assert((kSlots & kMask) == 0, "a power of two");

  struct slot {
    // Writer: the producer (release, after value). Partner: the consumer's acquire load.
    std::atomic<std::uint64_t> seq{0};
    T value{};  // written before seq's release, read after its acquire
  };

  // Writer: the consumer (release, after reading a slot). Partner: the producer's acquire
  // reload when its cached head says full.
  alignas(kCacheLine) std::atomic<std::uint64_t> head_{0};
  std::uint64_t next_ = 0;  // consumer-private: the index it takes next
  // Producer-private.
  alignas(kCacheLine) std::uint64_t tail_ = 0;
  std::uint64_t cached_head_ = 0;
  alignas(kCacheLine) std::unique_ptr<slot[]> slots_;
};

}  // namespace knit::detail
