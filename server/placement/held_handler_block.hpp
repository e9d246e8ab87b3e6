// held_handler_block: one block of the host thread's Asio handler memory, held by a pooled call
// from its submit to its completion, so that the host's handler-memory cache sees the same
// traffic as when the call is an Asio operation of its own (docs/host-path.md).
#pragma once

#include <cstddef>
#include <utility>

#include <boost/asio/recycling_allocator.hpp>

namespace knit_server {

// Why. Asio recycles the memory of its operations through a cache of two blocks per thread
// (the recycling allocator). Reading a request frees the read's block; in KNIT_MODE=asio the
// post to the thread pool takes a block back at once, and the result posted back frees one
// just before the response's write takes it. A knit pool call took nothing from that cache:
// its read's block went into a full cache (free()), and a drain that delivered several
// results made their writes allocate from an empty one (aligned_alloc). Counted with
// callgrind on the host thread under the mixed load: about 0.8 aligned_alloc + free per
// request in pooled mode against 0.01 in asio mode, some 500 instructions per request.
// Holding one block per call (taken where the read's block was just freed, given back just
// before the completion's write allocates) keeps the cache balanced as in asio mode.
// Re-measured on 2026-12-02 against a build without it (bench/results/regressions-2cpu): it
// still saves 175-237 host instructions per request (2.0-2.6%, all in malloc/free) under the
// mixed load at native cost; rps and CPU per response on the loaded 2-CPU box do not resolve it.
//
// The block is requested with a size of 1 so that any cached block serves it: it keeps the
// size it had (Asio records a block's capacity in the block), and so stays large enough for
// the operation that gets it next. Host thread: the cache is the calling thread's; a block
// given back on another thread, or outside the io_context's run(), is simply freed.
class held_handler_block {
 public:
  // Takes a block from the calling thread's cache (or the heap). May throw std::bad_alloc.
  held_handler_block() : block_(allocator().allocate(1)) {}
  held_handler_block(held_handler_block&& other) noexcept
      : block_(std::exchange(other.block_, nullptr)) {}
  held_handler_block(const held_handler_block&) = delete;
  held_handler_block& operator=(const held_handler_block&) = delete;
  held_handler_block& operator=(held_handler_block&&) = delete;
  ~held_handler_block() { release(); }

  // Gives the block back to the calling thread's cache now (once; later calls do nothing).
  void release() noexcept {
    if (block_) allocator().deallocate(std::exchange(block_, nullptr), 1);
  }

 private:
  static boost::asio::recycling_allocator<std::byte> allocator() noexcept { return {}; }

  std::byte* block_;
};

}  // namespace knit_server
