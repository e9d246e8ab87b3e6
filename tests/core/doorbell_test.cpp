#include "worker_doorbell.hpp"

#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "host_doorbell.hpp"

namespace {

using knit::detail::park_end;
using knit::detail::worker_doorbell;
using knit::detail::worker_state;

TEST(worker_doorbell, starts_running_and_tracks_worker_states) {
  worker_doorbell bell;
  EXPECT_EQ(bell.state(), worker_state::running);
  bell.set_spinning();
  EXPECT_EQ(bell.state(), worker_state::spinning);
  bell.announce_park();
  EXPECT_EQ(bell.state(), worker_state::parked);
  EXPECT_TRUE(bell.cancel_park());
  EXPECT_EQ(bell.state(), worker_state::running);
}

TEST(worker_doorbell, no_wake_syscall_for_a_running_or_spinning_worker) {
  worker_doorbell bell;
  EXPECT_FALSE(bell.wake_if_parked());
  bell.set_spinning();
  EXPECT_FALSE(bell.wake_if_parked());
}

TEST(worker_doorbell, only_one_ringer_wins_the_wake) {
  worker_doorbell bell;
  bell.announce_park();
  EXPECT_TRUE(bell.wake_if_parked());
  EXPECT_FALSE(bell.wake_if_parked()) << "a second ringer must not issue another FUTEX_WAKE";
  EXPECT_EQ(bell.state(), worker_state::running);
  EXPECT_FALSE(bell.cancel_park()) << "the worker learns it was already woken";
}

TEST(worker_doorbell, timed_park_ends_with_timeout_and_running_state) {
  worker_doorbell bell;
  bell.announce_park();
  EXPECT_EQ(bell.wait(5), park_end::timeout);
  EXPECT_EQ(bell.state(), worker_state::running);
}

TEST(worker_doorbell, parked_thread_is_woken_by_the_ringer) {
  worker_doorbell bell;
  std::atomic<bool> parked{false};
  park_end how = park_end::timeout;
  std::thread t([&] {
    bell.announce_park();
    parked = true;
    how = bell.wait(0);  // no timeout: only the ringer can end it
  });
  while (!parked) std::this_thread::yield();
  // Ring until the CAS wins (the worker may not have reached FUTEX_WAIT yet; the futex
  // value check covers that: FUTEX_WAIT returns at once if the word changed).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool rung = false;
  while (!rung && std::chrono::steady_clock::now() < deadline) rung = bell.wake_if_parked();
  ASSERT_TRUE(rung);
  t.join();
  EXPECT_EQ(how, park_end::doorbell);
}

TEST(host_doorbell, coalesces_until_reset) {
  knit::detail::host_doorbell bell;
  EXPECT_TRUE(bell.notify()) << "first completion writes the eventfd";
  EXPECT_FALSE(bell.notify()) << "later ones are coalesced";
  EXPECT_FALSE(bell.notify());
  pollfd p{bell.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 0), 1);
  bell.reset();
  p.revents = 0;
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "reset drains the eventfd";
  EXPECT_TRUE(bell.notify()) << "after a reset the next completion writes again";
}

}  // namespace
