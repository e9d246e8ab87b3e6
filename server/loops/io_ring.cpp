// One event loop's io_uring: set-up with its fallbacks, the turns inside Asio's run(), the
// operations' submission, completion and cancellation (the spec is in io_ring.hpp).
#include "loops/io_ring.hpp"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <system_error>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include "invariant.hpp"  // KNIT_ASSERT
#include "loops/reactor_wake.hpp"

namespace knit_server {

namespace net = boost::asio;

namespace {

// user_data of the ring's own operations; a ring_op's address is never this small.
constexpr std::uint64_t kReactorPoll = 1;
constexpr std::uint64_t kCancel = 2;
constexpr std::uint64_t kWatchPoll = 3;

// SQ slots: a turn queues about one operation per connection it served; a full SQ is
// submitted early (next_sqe). The CQ has room for four times as many completions, and the
// kernel keeps what overflows it (IORING_FEAT_NODROP, Linux 5.5).
constexpr unsigned kEntries = 256;
// How long the destructor waits for the kernel to end the cancelled operations.
constexpr auto kTeardownWait = std::chrono::seconds(1);

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

ring_op::~ring_op() { KNIT_ASSERT(!pending()); }

std::unique_ptr<io_ring> io_ring::open(net::io_context& io, std::string& why_not) {
  if (!kReactorWakeActive) {
    why_not = "this Boost.Asio is not the one io_ring's wake was written for (1.81, epoll)";
    return nullptr;
  }
  std::unique_ptr<io_ring> r(new io_ring());
  const auto init = [&r](unsigned flags) {
    io_uring_params p{};
    p.flags = flags | IORING_SETUP_CQSIZE;
    p.cq_entries = kEntries * 4;
    return io_uring_queue_init_params(kEntries, &r->ring_, &p);
  };
  int rc = init(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
  r->deferred_ = rc == 0;
  if (rc == -EINVAL) rc = init(0);  // before Linux 6.1
  if (rc < 0) {
    why_not = "io_uring_setup: " + errno_text(-rc);
    return nullptr;
  }
  r->ready_ = true;
  // MSG_WAITALL on a send came with Linux 5.18 and CQE_SKIP with 5.17: both are older than
  // DEFER_TASKRUN (6.1), which is what the pair is tested with.
  r->links_sends_ = r->deferred_ && (r->ring_.features & IORING_FEAT_CQE_SKIP) != 0;
  if (!(r->ring_.features & IORING_FEAT_NODROP)) {
    why_not = "the kernel may drop completions (no IORING_FEAT_NODROP: before Linux 5.5)";
    return nullptr;
  }
  // The reactor's multishot poll came with Linux 5.13, as did this feature bit; without it
  // the poll would fail at every re-arm.
  if (!(r->ring_.features & IORING_FEAT_RSRC_TAGS)) {
    why_not = "the kernel has no multishot poll (before Linux 5.13)";
    return nullptr;
  }
  io_uring_probe* probe = io_uring_get_probe_ring(&r->ring_);
  if (probe == nullptr) {
    why_not = "the kernel cannot list its io_uring operations (before Linux 5.6)";
    return nullptr;
  }
  const bool has_ops = io_uring_opcode_supported(probe, IORING_OP_RECV) &&
                       io_uring_opcode_supported(probe, IORING_OP_SENDMSG) &&
                       io_uring_opcode_supported(probe, IORING_OP_POLL_ADD) &&
                       io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL);
  io_uring_free_probe(probe);
  if (!has_ops) {
    why_not = "the kernel lacks an io_uring operation the loop needs (recv, sendmsg, poll)";
    return nullptr;
  }
  r->reactor_fd_ = reactor_fd(io);
  if (r->reactor_fd_ < 0) {
    why_not = "Asio's reactor has no descriptor";
    return nullptr;
  }
  r->arm_reactor_poll();
  return r;
}

io_ring::~io_ring() {
  if (!ready_) return;
  // Cancel what is pending, and wait until the kernel has ended each: its buffers belong to
  // owners that go with the last reference the operation holds. Cancelled again every wait:
  // a pair's receive that had not started when its cancel came (its send just done) is
  // found by the next.
  const auto until = std::chrono::steady_clock::now() + kTeardownWait;
  while (pending_count_ > 0 && std::chrono::steady_clock::now() < until) {
    for (ring_op* op = pending_; op != nullptr; op = op->next_) {
      io_uring_sqe* sqe = try_sqe();
      if (sqe == nullptr) break;  // what is not cancelled is kept below
      io_uring_prep_cancel64(sqe, reinterpret_cast<std::uint64_t>(op), 0);
      io_uring_sqe_set_data64(sqe, kCancel);
    }
    __kernel_timespec wait{.tv_sec = 0, .tv_nsec = 50'000'000};
    io_uring_cqe* cqe = nullptr;
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &wait, nullptr);
    while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
      const std::uint64_t data = cqe->user_data;
      io_uring_cqe_seen(&ring_, cqe);
      if (data == kReactorPoll || data == kCancel || data == kWatchPoll) continue;
      // The owner may go now: the kernel is done with its buffers.
      if (!(cqe->flags & IORING_CQE_F_MORE)) end(*reinterpret_cast<ring_op*>(data)).reset();
    }
  }
  // Still pending past the wait (a kernel that never ends them): their owners are kept for
  // the rest of the process rather than freed under the kernel's feet.
  while (pending_ != nullptr) {
    ring_op* op = pending_;
    unlink(*op);
    new std::shared_ptr<void>(std::move(op->owner_));  // NOLINT: kept on purpose
  }
  io_uring_queue_exit(&ring_);
}

io_uring_sqe* io_ring::try_sqe() noexcept {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {  // the SQ is full: submit what is queued, then take a slot again
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

io_uring_sqe* io_ring::next_sqe() {
  io_uring_sqe* sqe = try_sqe();
  if (sqe == nullptr) {
    throw std::system_error(EBUSY, std::generic_category(), "io_uring: no submission slot");
  }
  return sqe;
}

void io_ring::arm_reactor_poll() {
  io_uring_sqe* sqe = next_sqe();
  io_uring_prep_poll_multishot(sqe, reactor_fd_, POLLIN);
  io_uring_sqe_set_data64(sqe, kReactorPoll);
}

void io_ring::watch_readable(int fd, void (*ready)(void*), void* context) {
  KNIT_ASSERT(watch_fd_ < 0 && fd >= 0 && ready != nullptr);  // one watch per ring
  watch_fd_ = fd;
  watch_ready_ = ready;
  watch_context_ = context;
  arm_watch();
}

void io_ring::arm_watch() {
  io_uring_sqe* sqe = next_sqe();
  io_uring_prep_poll_multishot(sqe, watch_fd_, POLLIN);
  io_uring_sqe_set_data64(sqe, kWatchPoll);
}

void io_ring::link(ring_op& op, std::shared_ptr<void> owner, io_uring_sqe* sqe) {
  KNIT_ASSERT(!op.pending());  // one submission per operation at a time
  KNIT_ASSERT(owner != nullptr);
  op.owner_ = std::move(owner);
  op.prev_ = nullptr;
  op.next_ = pending_;
  if (pending_ != nullptr) pending_->prev_ = &op;
  pending_ = &op;
  ++pending_count_;
  io_uring_sqe_set_data(sqe, &op);
}

void io_ring::unlink(ring_op& op) noexcept {
  if (op.prev_ != nullptr) {
    op.prev_->next_ = op.next_;
  } else {
    pending_ = op.next_;
  }
  if (op.next_ != nullptr) op.next_->prev_ = op.prev_;
  op.prev_ = op.next_ = nullptr;
  --pending_count_;
}

std::shared_ptr<void> io_ring::end(ring_op& op) noexcept {
  KNIT_ASSERT(op.pending());
  // A pair's send completes only when it failed, and then ends its receive: the kernel
  // cancels the receive behind a failed send without a completion (a head that skips its
  // success skips its links' completions when it fails: REQ_F_SKIP_LINK_CQES).
  if (ring_op* recv = std::exchange(op.linked_recv_, nullptr)) {
    recv->skipped_send_ = nullptr;
    unlink(*recv);
    recv->owner_.reset();
  }
  // A receive that ends while its send is still pending: the send succeeded (a failed one
  // would have ended the pair) and posts no completion of its own.
  if (ring_op* send = std::exchange(op.skipped_send_, nullptr)) {
    send->linked_recv_ = nullptr;
    unlink(*send);
    send->owner_.reset();
  }
  unlink(op);
  return std::move(op.owner_);
}

void io_ring::prep_recv(io_uring_sqe* sqe, int fd, void* data, std::size_t size) const noexcept {
  io_uring_prep_recv(sqe, fd, data, size, 0);
  // Linux 5.19; every kernel that takes DEFER_TASKRUN (6.1) has it.
  if (deferred_) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
}

void io_ring::recv(ring_op& op, int fd, void* data, std::size_t size, std::shared_ptr<void> owner) {
  io_uring_sqe* sqe = next_sqe();
  prep_recv(sqe, fd, data, size);
  link(op, std::move(owner), sqe);
}

void io_ring::send_then_recv(ring_op& send, int fd, const msghdr* msg, ring_op& recv, void* data,
                             std::size_t size, std::shared_ptr<void> owner) {
  KNIT_ASSERT(links_sends_);
  // Both in one submission: a link that a full SQ's early submit cut in two would start the
  // receive at once.
  if (io_uring_sq_space_left(&ring_) < 2) io_uring_submit(&ring_);
  if (io_uring_sq_space_left(&ring_) < 2) {
    throw std::system_error(EBUSY, std::generic_category(), "io_uring: no submission slot");
  }
  io_uring_sqe* first = io_uring_get_sqe(&ring_);
  io_uring_prep_sendmsg(first, fd, msg, MSG_NOSIGNAL | MSG_WAITALL);
  first->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
  link(send, owner, first);
  io_uring_sqe* second = io_uring_get_sqe(&ring_);
  prep_recv(second, fd, data, size);
  link(recv, std::move(owner), second);
  send.linked_recv_ = &recv;
  recv.skipped_send_ = &send;
}

void io_ring::sendmsg(ring_op& op, int fd, const msghdr* msg, std::shared_ptr<void> owner) {
  io_uring_sqe* sqe = next_sqe();
  io_uring_prep_sendmsg(sqe, fd, msg, MSG_NOSIGNAL);
  link(op, std::move(owner), sqe);
}

void io_ring::cancel(ring_op& op) noexcept {
  if (!op.pending()) return;
  // No slot even after a submit (the kernel refused the submit): the operation ends with its
  // peer, or at the teardown.
  io_uring_sqe* sqe = try_sqe();
  if (sqe == nullptr) return;
  io_uring_prep_cancel64(sqe, reinterpret_cast<std::uint64_t>(&op), 0);
  io_uring_sqe_set_data64(sqe, kCancel);
}

void io_ring::complete(const io_uring_cqe& cqe) {
  if (cqe.user_data == kCancel) return;
  if (cqe.user_data == kReactorPoll) {
    // Asio's reactor has something: the next turn's poll runs it. Re-armed when the kernel
    // ended the multishot poll (an error, or a full CQ).
    reactor_due_ = true;
    if (!(cqe.flags & IORING_CQE_F_MORE)) arm_reactor_poll();
    return;
  }
  if (cqe.user_data == kWatchPoll) {
    // Re-armed first: the callback may throw (run() logs it and goes on).
    // Called on an ended poll too (an error, a full CQ): a drain that finds nothing costs
    // little, a wake missed would leave results waiting.
    if (!(cqe.flags & IORING_CQE_F_MORE)) arm_watch();
    watch_ready_(watch_context_);
    return;
  }
  auto* op = reinterpret_cast<ring_op*>(cqe.user_data);
  std::shared_ptr<void> owner = end(*op);
  op->done_(std::move(owner), cqe.res);
}

void io_ring::turns(net::io_context& io) {
  while (!io.stopped()) {
    // io.poll(), keeping count of what the last turn posted, with one epoll_wait of the
    // reactor when its descriptor became readable since the last (or that one may have left
    // descriptors on epoll's list), none otherwise.
    if (std::exchange(reactor_due_, false)) {
      reactor_due_ = poll_reactor_once_inside_handler(io).may_have_left;
    } else {
      poll_queued_inside_handler(io);
    }
    if (io.stopped()) return;
    const bool wait = !reactor_due_ && arm_reactor_wake(io);
    const int rc =
        wait ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit_and_get_events(&ring_);
    // EINTR: a signal; EBUSY/EAGAIN: completions must be reaped first (below).
    if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
      throw std::system_error(-rc, std::generic_category(), "io_uring_enter");
    }
    turn_completions_ = io_uring_cq_ready(&ring_);
    io_uring_cqe* cqe = nullptr;
    while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
      const io_uring_cqe copy = *cqe;
      io_uring_cqe_seen(&ring_, cqe);  // before the handler: one that throws loses nothing
      complete(copy);
    }
  }
}

void io_ring::run(net::io_context& io, log_writer& err) {
  for (;;) {
    try {
      // The turns are one handler of io.run() that returns only once io is stopped; after a
      // handler threw out of it, another is posted (one at a time: a second one queued
      // would run nested inside the first's poll()).
      if (!turns_queued_) {
        turns_queued_ = true;
        reactor_due_ = true;  // the first turn (or the first after a throw) asks the reactor
        net::post(io, [this, &io] {
          turns_queued_ = false;
          turns(io);
        });
      }
      io.run();
      return;
    } catch (const std::exception& e) {
      err.write_line(std::string("knit-server: error in the event loop: ") + e.what());
    }
  }
}

boost::system::error_code ring_error(int result, bool is_read) {
  if (result == -ECANCELED) return net::error::operation_aborted;
  if (result < 0) return {-result, boost::system::system_category()};
  if (result == 0 && is_read) return net::error::eof;
  return {};
}

}  // namespace knit_server
