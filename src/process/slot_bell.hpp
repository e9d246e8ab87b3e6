// slot_bell: how one side of a process slot waits for the other side's sequence word to move,
// and how the other side signals it only when it sleeps. Used both ways: the host's worker
// thread waits for the child's answer (answer_seq), the child waits for the next request
// (request_seq); shared_region.hpp has the words.
//
// Protocol (no lost wake-up; a syscall only when the waiter really sleeps)
//   ringer, after publishing its seq (release):   waiter:
//     fence(seq_cst)                                spin up to spin_ns re-checking the seq
//     if sleeping != 0: write 8 bytes to the bell   sleeping = 1
//                                                   fence(seq_cst)      // the Dekker point
//                                                   re-check the seq: moved -> sleeping = 0
//                                                   poll {bell, other fd} (until a time)
//                                                   sleeping = 0, drain the bell
//                                                   back to the re-check
// Guarantee: the two fences are ordered one way or the other. If the ringer's comes first,
// the waiter's re-check sees the new seq; if the waiter's comes first, the ringer sees
// sleeping = 1 and writes the bell, which ends (or pre-empts) the poll. So a waiter never
// sleeps past a published seq, and a ringer whose waiter is awake (spinning, or about to
// re-check) makes no syscall.
// The bells (spawn.hpp): host -> child `request` is a pipe whose write end only the host
// holds, both ends O_NONBLOCK; child -> host `answer` is an eventfd. The ringer's write never
// blocks: a full pipe (a child that never drains it) or an eventfd at its limit answers
// EAGAIN, which means "already rung" and is ignored. Not an eventfd host -> child: the
// child holds the same open file as the host, could set the count to 0xfffffffffffffffe (the
// host's next write blocks) or clear O_NONBLOCK on it; it cannot write into a pipe end it
// does not hold, nor change the host's end's flags.
// Left-over signal: the ringer may see sleeping = 1 just as the waiter's re-check finds the
// seq and does not sleep; the bell then keeps a count (bytes). The waiter drains what one
// read takes (a pipe's read end must be O_NONBLOCK so the drain never blocks), and a count
// left over costs the next wait one spurious wake, after which the waiter re-checks and
// sleeps again. So a wake means "look", never "there is news".
// The other fd (the child's pidfd for the host, the alive pipe for the child) ends the wait
// whatever the seq: the other side is gone. So does a hang-up of the bell (the host closed
// the request pipe's write end: it has given the child up).
// Why not a shared futex: the host must wait for the answer and for the child's death at
// once, and only poll waits on a pidfd; the `sleeping` word is what saves the syscall a
// futex would have saved.
// Spin: only when this process may run on more than one CPU (sched_getaffinity). On one CPU
// the other side cannot run while we spin, so a spin would only delay the answer.
// Words: `sleeping` is written by the waiter (1 before its fence, 0 after a wake) and read by
// the ringer; a child that scribbles on it can only cost the host a syscall that never blocks.
#pragma once

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include "process/shared_region.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KNIT_SLOT_RELAX() _mm_pause()
#else
#define KNIT_SLOT_RELAX() ((void)0)
#endif

namespace knit::detail {

using bell_clock = std::chrono::steady_clock;

// The ringer's half, after its release store of the seq. `bell`: the write end of a pipe or
// an eventfd, either O_NONBLOCK: EAGAIN (full, already rung) is a ring, not an error.
inline void ring_if_sleeping(std::uint32_t& sleeping, int bell) noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the waiter's fence
  if (load(sleeping) == 0) return;
  const std::uint64_t one = 1;
  while (::write(bell, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

// Empties a bell after a wake: an eventfd's read takes all its count; a pipe's read end (which
// must be O_NONBLOCK) is read until a read comes back short.
inline void drain_bell(int bell) noexcept {
  char bytes[256];
  for (;;) {
    const ssize_t n = ::read(bell, bytes, sizeof bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof bytes)) return;
  }
}

// True when this thread may run on more than one CPU: a spin can then overlap the other side.
inline bool may_spin() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return false;
  return CPU_COUNT(&set) > 1;
}

enum class bell_end {
  moved,     // moved() returned true
  other_fd,  // the other fd became readable (or hung up, or failed): the other side is gone
  timeout,   // `until` passed
};

// The waiter's half. `moved()` re-checks the seq (an acquire load; true once it changed).
// `bell`: an eventfd or a pipe's O_NONBLOCK read end.
// Hook points for the regression tests: `before_recheck` runs between the fence and the
// re-check (where a ringer's publication may land).
template <class Moved, class Hook = void (*)()>
bell_end wait_for_ring(
    Moved moved, std::uint32_t& sleeping, int bell, int other_fd, bell_clock::time_point until,
    std::chrono::nanoseconds spin, Hook before_recheck = [] {}) {
  if (moved()) return bell_end::moved;
  if (spin.count() > 0) {
    const auto spin_end = std::min(until, bell_clock::now() + spin);
    int n = 0;
    for (;;) {
      KNIT_SLOT_RELAX();
      if (moved()) return bell_end::moved;
      if (++n % 64 == 0 && bell_clock::now() >= spin_end) break;  // a clock read per 64
    }
  }
  for (;;) {
    store(sleeping, std::uint32_t{1});
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the ringer's fence
    before_recheck();
    if (moved()) {
      store(sleeping, std::uint32_t{0});
      return bell_end::moved;
    }
    int timeout_ms = -1;
    if (until != bell_clock::time_point::max()) {
      const auto left = until - bell_clock::now();
      if (left <= bell_clock::duration::zero()) {
        store(sleeping, std::uint32_t{0});
        return moved() ? bell_end::moved : bell_end::timeout;
      }
      // Rounded up: poll must not return before `until`, only after.
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
      timeout_ms = static_cast<int>(std::min<std::int64_t>(ms, 1'000'000));
    }
    pollfd fds[2] = {{bell, POLLIN, 0}, {other_fd, POLLIN, 0}};
    const int n = ::poll(fds, 2, timeout_ms);
    store(sleeping, std::uint32_t{0});
    if (n < 0 && errno != EINTR) return bell_end::other_fd;  // cannot wait: treat as gone
    if (n > 0 && (fds[0].revents & POLLIN)) drain_bell(bell);
    // The seq first: an answer written just before a death is still good.
    if (moved()) return bell_end::moved;
    if (n > 0 && fds[1].revents != 0) return bell_end::other_fd;
    if (n > 0 && (fds[0].revents & ~POLLIN) != 0) return bell_end::other_fd;
    // A spurious wake (a left-over count), EINTR, or poll's timeout: look again.
  }
}

}  // namespace knit::detail
