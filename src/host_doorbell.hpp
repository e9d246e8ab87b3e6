// host_doorbell: wakes the host's event loop through one eventfd, coalesced: many
// completions, one write, and no write while the host is already signalled.
//
// Protocol
//   worker, after pushing a result:        host, when the eventfd fires (drain()):
//     fence(seq_cst)                          read(eventfd)              // reset the counter
//     if !signalled:                          signalled.exchange(false)
//       if !signalled.exchange(true):         fence(seq_cst)             // pairs with the worker's
//         write(eventfd, 1)                   pop every completion ring
// Guarantee: either the host's pop (after its fence) sees the pushed result, or the
// worker's check (after its fence) sees signalled == false and writes the eventfd, so the
// loop runs drain() again. The exchange lets exactly one worker write per round.
// The read only resets the counter for a watch that fires while it is readable; a watch
// that fires on every write (completion_watch::each_write) leaves it unread, and the
// counter grows by one per round: 2^64 - 2 rounds, the write's limit, are never reached.
#pragma once

#include <atomic>

#include "knit/detail/cache_line.hpp"

namespace knit::detail {

class host_doorbell {
 public:
  host_doorbell();  // throws std::system_error if eventfd() fails
  ~host_doorbell();
  host_doorbell(const host_doorbell&) = delete;
  host_doorbell& operator=(const host_doorbell&) = delete;

  int fd() const noexcept { return fd_; }

  // Worker, after publishing a result. Returns true if it wrote the eventfd.
  bool notify() noexcept;

  // Host, before popping completion rings. `read` false: the caller knows the read is not
  // needed: the eventfd was not written since the last read (an epoll set holding it did
  // not report it), or the loop's watch fires on every write whatever the counter holds.
  void reset(bool read = true) noexcept;

 private:
  int fd_ = -1;
  // Writers: the workers (exchange false -> true, in notify) and the host (exchange
  // -> false, in reset). Partners: each other's exchange, ordered against the rings by the
  // two seq_cst fences (the Dekker point in the protocol above).
  alignas(kCacheLine) std::atomic<bool> signalled_{false};
};

}  // namespace knit::detail
