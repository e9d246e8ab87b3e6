// slot_bell.hpp between two threads of this process (the same code the host and a child run
// across processes, where ThreadSanitizer cannot follow): each interleaving the protocol
// guards, forced through its hook, then a ping-pong stress whose every wait is bounded, so
// a lost wake-up fails the test instead of hanging it.
#include "process/slot_bell.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace {

using namespace std::chrono_literals;
using knit::detail::bell_clock;
using knit::detail::bell_end;
using knit::detail::load;
using knit::detail::ring_if_sleeping;
using knit::detail::store;
using knit::detail::wait_for_ring;

struct fd_pair {
  int fds[2] = {-1, -1};
  fd_pair() { EXPECT_EQ(::pipe(fds), 0); }
  ~fd_pair() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

// One direction of a slot: the seq, the waiter's sleeping word, the eventfd, and a pipe
// standing for the other side's life (its read end is the waiter's other fd).
struct bell_fixture {
  std::uint64_t seq = 0;
  std::uint32_t sleeping = 0;
  int eventfd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  fd_pair life;
  ~bell_fixture() { ::close(eventfd); }

  void publish(std::uint64_t v) { store(seq, v, std::memory_order_release); }
  auto moved_from(std::uint64_t last) {
    return [this, last] { return load(seq, std::memory_order_acquire) != last; };
  }
  // The eventfd's count, consumed (0 when none).
  std::uint64_t take_count() {
    std::uint64_t n = 0;
    return ::read(eventfd, &n, sizeof n) == sizeof n ? n : 0;
  }
};

TEST(slot_bell, ringer_that_sees_no_sleeper_makes_no_syscall) {
  bell_fixture b;
  b.publish(1);
  ring_if_sleeping(b.sleeping, b.eventfd);
  EXPECT_EQ(b.take_count(), 0U);
}

// The Dekker point: the ringer publishes (and rings, seeing sleeping = 1) between the
// waiter's fence and its re-check. The re-check sees the seq; the waiter never sleeps; the
// ring is left over in the eventfd.
TEST(slot_bell, seq_published_between_the_fence_and_the_recheck_is_seen_without_sleeping) {
  bell_fixture b;
  const auto end = wait_for_ring(b.moved_from(0), b.sleeping, b.eventfd, b.life.fds[0],
                                 bell_clock::now() + 10s, 0ns, [&] {
                                   b.publish(1);
                                   ring_if_sleeping(b.sleeping, b.eventfd);
                                 });
  EXPECT_EQ(end, bell_end::moved);
  EXPECT_EQ(load(b.sleeping), 0U) << "the waiter left its sleeping word set";
  EXPECT_EQ(b.take_count(), 1U) << "the ringer saw the announced sleep and rang";
}

// A left-over ring wakes the next wait once; the waiter looks, finds nothing new, and sleeps
// again (here until its deadline), with the eventfd drained.
TEST(slot_bell, left_over_ring_is_one_spurious_wake_then_sleep_again) {
  bell_fixture b;
  b.publish(1);
  const std::uint64_t one = 1;
  ASSERT_EQ(::write(b.eventfd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  const auto t0 = bell_clock::now();
  const auto end =
      wait_for_ring(b.moved_from(1), b.sleeping, b.eventfd, b.life.fds[0], t0 + 50ms, 0ns);
  EXPECT_EQ(end, bell_end::timeout);
  EXPECT_GE(bell_clock::now() - t0, 50ms) << "returned before its deadline";
  EXPECT_EQ(b.take_count(), 0U);
  EXPECT_EQ(load(b.sleeping), 0U);
}

// A waiter asleep in poll: the ringer sees its sleeping word and wakes it.
TEST(slot_bell, ringer_that_sees_a_sleeper_wakes_it) {
  bell_fixture b;
  std::atomic<int> end{-1};
  std::thread waiter([&] {
    end = static_cast<int>(wait_for_ring(b.moved_from(0), b.sleeping, b.eventfd, b.life.fds[0],
                                         bell_clock::time_point::max(), 0ns));
  });
  while (std::atomic_ref<std::uint32_t>(b.sleeping).load(std::memory_order_seq_cst) == 0) {
    std::this_thread::yield();
  }
  b.publish(1);
  ring_if_sleeping(b.sleeping, b.eventfd);
  waiter.join();
  EXPECT_EQ(end.load(), static_cast<int>(bell_end::moved));
}

TEST(slot_bell, other_side_gone_ends_the_wait) {
  bell_fixture b;
  ::close(b.life.fds[1]);  // EOF on the read end: what a child sees when its host dies
  b.life.fds[1] = -1;
  EXPECT_EQ(wait_for_ring(b.moved_from(0), b.sleeping, b.eventfd, b.life.fds[0],
                          bell_clock::time_point::max(), 0ns),
            bell_end::other_fd);
}

// An answer written just before a death is still an answer.
TEST(slot_bell, moved_seq_wins_over_the_other_side_gone) {
  bell_fixture b;
  ::close(b.life.fds[1]);
  b.life.fds[1] = -1;
  const auto end = wait_for_ring(
      b.moved_from(0), b.sleeping, b.eventfd, b.life.fds[0], bell_clock::time_point::max(), 0ns,
      [&] {
        static bool once = false;
        if (once) return;
        once = true;  // the first re-check misses; then poll sees both the ring and the EOF
        b.publish(1);
        const std::uint64_t one = 1;
        (void)!::write(b.eventfd, &one, sizeof one);
      });
  EXPECT_EQ(end, bell_end::moved);
}

// Ping-pong: A publishes n and rings B, B waits for n, publishes its answer n and rings A.
// A short spin makes many wakes land while the other side is between its spin and its
// sleep; every wait is bounded, so a lost wake-up shows as a failure, not a hang. Under
// ThreadSanitizer the payload written before each release store checks the ordering.
TEST(slot_bell, ping_pong_loses_no_wake_up) {
  bell_fixture to_b, to_a;
  constexpr std::uint64_t kRounds = 5'000;
  std::uint64_t payload = 0;  // written by A before each request, read by B after it
  std::atomic<bool> lost{false};
  std::thread b([&] {
    for (std::uint64_t n = 1; n <= kRounds && !lost; ++n) {
      const auto spin = std::chrono::nanoseconds(n % 3 == 0 ? 0 : 1'000);
      if (wait_for_ring(to_b.moved_from(n - 1), to_b.sleeping, to_b.eventfd, to_b.life.fds[0],
                        bell_clock::now() + 20s, spin) != bell_end::moved) {
        lost = true;
        break;
      }
      EXPECT_EQ(payload, n * 7);
      to_a.publish(n);
      ring_if_sleeping(to_a.sleeping, to_a.eventfd);
    }
  });
  for (std::uint64_t n = 1; n <= kRounds && !lost; ++n) {
    payload = n * 7;
    to_b.publish(n);
    ring_if_sleeping(to_b.sleeping, to_b.eventfd);
    const auto spin = std::chrono::nanoseconds(n % 2 == 0 ? 0 : 1'000);
    if (wait_for_ring(to_a.moved_from(n - 1), to_a.sleeping, to_a.eventfd, to_a.life.fds[0],
                      bell_clock::now() + 20s, spin) != bell_end::moved) {
      lost = true;
    }
  }
  b.join();
  EXPECT_FALSE(lost) << "a wait ran into its 20 s bound: a lost wake-up";
}

}  // namespace
