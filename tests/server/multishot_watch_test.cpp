// What knit::completion_watch::each_write relies on in the kernel, as the server's io_uring
// loop watches the pool's completion descriptor (io_ring::watch_readable, a multishot
// IORING_OP_POLL_ADD): the poll completes on every write to an eventfd that is never read,
// and only then (it is no readiness watch that fires while the counter is non-zero); and the
// same through an epoll set that holds the eventfd edge-triggered (the completion descriptor
// of a host with process workers), whether or not the set was waited on between the writes.
// If a kernel stopped doing so, the drain would have to read the eventfd again.
#include <liburing.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

namespace {

class MultishotWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    const int r = ::io_uring_queue_init(8, &ring_, 0);
    if (r < 0) GTEST_SKIP() << "no io_uring here: " << std::strerror(-r);
    ring_open_ = true;
    bell_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(bell_, 0);
  }
  void TearDown() override {
    if (ring_open_) ::io_uring_queue_exit(&ring_);
    if (bell_ >= 0) ::close(bell_);
    if (set_ >= 0) ::close(set_);
  }

  void watch(int fd) {
    io_uring_sqe* sqe = ::io_uring_get_sqe(&ring_);
    ASSERT_NE(sqe, nullptr);
    ::io_uring_prep_poll_multishot(sqe, fd, POLLIN);
    ::io_uring_sqe_set_data64(sqe, 7);
    ASSERT_EQ(::io_uring_submit(&ring_), 1);
  }

  void ring_bell() {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(bell_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }

  // The watch's completions within `ms`: each must be the multishot poll still armed
  // (IORING_CQE_F_MORE) reporting POLLIN.
  int completions_within(long ms) {
    int n = 0;
    __kernel_timespec limit{};
    limit.tv_sec = ms / 1000;
    limit.tv_nsec = (ms % 1000) * 1'000'000;
    io_uring_cqe* cqe = nullptr;
    while (::io_uring_wait_cqe_timeout(&ring_, &cqe, &limit) == 0) {
      EXPECT_EQ(cqe->user_data, 7u);
      EXPECT_TRUE(cqe->res > 0 && (cqe->res & POLLIN)) << "res " << cqe->res;
      EXPECT_TRUE(cqe->flags & IORING_CQE_F_MORE) << "the multishot poll ended";
      ::io_uring_cqe_seen(&ring_, cqe);
      ++n;
      limit = {};  // after the first, only what is already there
    }
    return n;
  }

  io_uring ring_{};
  bool ring_open_ = false;
  int bell_ = -1;
  int set_ = -1;
};

TEST_F(MultishotWatch, CompletesOnEveryWriteToAnEventfdNeverRead) {
  watch(bell_);
  for (int write = 1; write <= 3; ++write) {
    ring_bell();
    EXPECT_EQ(completions_within(5000), 1) << "write " << write;
  }
  // Readable all along (the counter holds 3), and no completion without a write.
  EXPECT_EQ(completions_within(50), 0);
}

TEST_F(MultishotWatch, CompletesOnEveryWriteThroughAnEdgeTriggeredEpollSet) {
  set_ = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(set_, 0);
  epoll_event bell{};
  bell.events = EPOLLIN | EPOLLET;
  ASSERT_EQ(::epoll_ctl(set_, EPOLL_CTL_ADD, bell_, &bell), 0);
  watch(set_);
  // Not waited on between writes (a host whose process ring has no child yet: its step
  // makes no epoll_wait).
  for (int write = 1; write <= 3; ++write) {
    ring_bell();
    EXPECT_EQ(completions_within(5000), 1) << "write " << write << ", set not waited on";
  }
  // Waited on between writes (the ring's step): each wait reports the write once, and
  // leaves the set quiet until the next.
  for (int write = 4; write <= 6; ++write) {
    ring_bell();
    EXPECT_EQ(completions_within(5000), 1) << "write " << write << ", set waited on";
    epoll_event got[2];
    EXPECT_EQ(::epoll_wait(set_, got, 2, 0), 1) << "write " << write;
    pollfd quiet{set_, POLLIN, 0};
    EXPECT_EQ(::poll(&quiet, 1, 0), 0) << "the set still readable after write " << write;
  }
  EXPECT_EQ(completions_within(50), 0);
}

}  // namespace
