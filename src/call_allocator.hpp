// call_allocator: host-only free list of fixed-size blocks for call records, so a steady
// stream of calls allocates nothing after warm-up. Records larger than a block (a huge
// capture or argument held by value) fall back to the heap. It also frees records: on the
// host (destroy), and on a retired worker thread that outlived its pool (destroy_orphan).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "knit/call.hpp"
#include "knit/detail/cache_line.hpp"

namespace knit::detail {

class call_allocator {
 public:
  // 256 bytes holds a call with a std::string argument, a std::string result, a lambda
  // and a handler capturing a few pointers (sizeof checked in tests/core/pool_test.cpp).
  static constexpr std::size_t kBlock = 256;
  // Blocks kept for reuse; beyond this, freed blocks go back to the heap (bounded memory
  // after a burst).
  static constexpr std::size_t kMaxCached = 4096;

  call_allocator() = default;
  call_allocator(const call_allocator&) = delete;
  call_allocator& operator=(const call_allocator&) = delete;
  ~call_allocator() {
    for (void* p : free_) ::operator delete (p, std::align_val_t{kCacheLine});
  }

  // `block` tells free() where the memory came from (kBlock, or 0 for the heap path).
  void* allocate(std::size_t size, std::size_t align, std::uint32_t& block) {
    if (size <= kBlock && align <= kCacheLine) {
      block = kBlock;
      if (!free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
      return ::operator new (kBlock, std::align_val_t{kCacheLine});
    }
    block = 0;  // pool::submit static_asserts align <= kCacheLine
    return ::operator new (size, std::align_val_t{kCacheLine});
  }

  void free(void* p, std::uint32_t block) noexcept {
    if (block == kBlock && free_.size() < kMaxCached) {
      try {
        free_.push_back(p);
        return;
      } catch (...) {
        // vector growth failed: fall through and release the block instead.
      }
    }
    // Both paths allocate with kCacheLine alignment; delete must name the same value.
    ::operator delete (p, std::align_val_t{kCacheLine});
  }

  // Host: destroys a record in place and takes its memory back.
  void destroy(call_base* c) noexcept {
    const std::uint32_t block = c->block_size;
    c->destroy();
    free(c, block);
  }

  // Any thread, no allocator needed: destroys a record whose pool may be gone (a stuck
  // call's record, left to its retired worker; worker_seats.cpp, step 4) and returns its
  // memory to the heap. Both of allocate()'s paths use kCacheLine alignment, so one delete
  // fits either.
  static void destroy_orphan(call_base* c) noexcept {
    c->destroy();
    ::operator delete (static_cast<void*>(c), std::align_val_t{kCacheLine});
  }

 private:
  std::vector<void*> free_;
};

}  // namespace knit::detail
