// io_ring: one event loop's io_uring. The loop thread waits in the ring instead of Asio's
// reactor, the sessions' head reads and response writes go through it, and everything else
// (the listener, timers, posts from other threads, body reads, a lingering close) stays
// Asio's, polled once per turn (KNIT_IO, docs/server-io.md).
//
// Spec.
//   Set-up (open): IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (Linux 6.1: the
//     kernel runs completions only when this thread enters the ring, never by interrupting
//     it), without them where refused (EINVAL), and no ring at all where io_uring_setup is
//     refused (ENOSYS: not built in; EPERM: a seccomp filter, kernel.io_uring_disabled) or a
//     needed operation is missing (IORING_OP_RECV, SENDMSG, POLL_ADD, ASYNC_CANCEL): open
//     returns null and says why, and the loop runs Asio's own run() (epoll). So does a kernel
//     before 5.13 (no multishot poll).
//   One multishot IORING_OP_POLL_ADD watches Asio's reactor descriptor (reactor_fd), re-armed
//     whenever its completion lacks IORING_CQE_F_MORE; another, where the loop asks
//     (watch_readable), the pool's completion descriptor, whose completions run its callback.
//   A turn, run inside a handler of io.run() on the loop's thread (so that what the
//   completions post stays on this thread's queue, with no interrupt):
//     1. io.poll(): Asio's ready handlers, and its reactor without waiting (one epoll_wait
//        0, poll_reactor_once_inside_handler) only when the reactor's descriptor became
//        readable since the last turn that ran it, or that run may have left descriptors on
//        epoll's list (a full batch); poll_queued_inside_handler otherwise: nothing there;
//     2. unless the reactor must run again, arm_reactor_wake(io): when nothing is queued and
//        io is not stopped, a post from another thread or a stop will make the reactor
//        descriptor readable from now on (reactor_wake.hpp);
//     3. armed: io_uring_submit_and_wait(1), one system call that submits every operation
//        the last turn queued and waits for a completion; not armed (a handler is queued):
//        io_uring_submit_and_get_events, which does not wait;
//     4. every completion in the CQ, each marked seen before its operation's handler runs
//        (a handler that throws loses nothing; run() logs it and goes on).
//     The turns end when io is stopped; run() returns when io.run() does.
//   An operation (ring_op) belongs to its owner (a session) and holds a shared_ptr to it
//   from submission to completion, as an Asio handler would: the owner lives while the kernel
//   may write into its buffers. At most one submission per ring_op at a time (asserted).
//   send_then_recv queues a pair: a sendmsg of the whole message (MSG_WAITALL: the kernel
//     sends a short send's rest itself, and a short send fails) whose success posts no
//     completion (IOSQE_CQE_SKIP_SUCCESS), and, linked behind it (IOSQE_IO_LINK), a receive
//     that starts once the message is out. Its point: the wait in step 3 is not ended by the
//     send's own completion, one io_uring_enter a response fewer (where the kernel has both
//     flags: Linux 6.1, as DEFER_TASKRUN). The receive's completion ends both operations (the
//     send's handler does not run); a failed send's completion ends both too (the receive's
//     handler does not run): the kernel cancels the receive behind it and, the send having
//     asked to skip its success, skips the receive's completion as well
//     (IoRingPair.ASendThatFailsEndsThePairWithItsOwnCompletionAlone holds it to that).
//     The receive takes its descriptor when it starts: the owner keeps fd open until the
//     pair has ended (another connection may be given the number).
//   cancel(op) queues IORING_OP_ASYNC_CANCEL by the op's address (not by descriptor: the
//   descriptor may be closed before the cancel is submitted; the pending operation holds
//   the file, so a close(2) takes effect when it ends). The operation completes with
//   -ECANCELED, or normally if it had finished first.
//   The destructor, on the loop's thread, cancels every pending operation, waits until the
//   kernel has ended each (at most 1 s), drops their owners without running their handlers,
//   and closes the ring: no buffer is written after its owner is gone.
// Threads: every member on the loop's thread only (SINGLE_ISSUER makes another thread's
// submission fail with EEXIST).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <liburing.h>

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include "telemetry/log_writer.hpp"

namespace knit_server {

class io_ring;

// One operation slot of an owner (a session's read, its write). Not movable: the kernel
// knows it by address.
class ring_op {
 public:
  // Runs on the loop's thread with the completion's result (bytes, or -errno) and the
  // owner, which the op no longer holds.
  using handler = void (*)(std::shared_ptr<void> owner, int result);

  explicit ring_op(handler done) noexcept : done_(done) {}
  ring_op(const ring_op&) = delete;
  ring_op& operator=(const ring_op&) = delete;
  ~ring_op();  // asserts it is not pending: its owner would still be held

  bool pending() const noexcept { return owner_ != nullptr; }

 private:
  friend class io_ring;
  handler done_;
  std::shared_ptr<void> owner_;  // set from submission to completion
  // send_then_recv, until the pair ends: on the receive, its send (whose success posts
  // nothing); on the send, its receive.
  ring_op* skipped_send_ = nullptr;
  ring_op* linked_recv_ = nullptr;
  ring_op* prev_ = nullptr;  // the ring's list of pending operations
  ring_op* next_ = nullptr;
};

class io_ring {
 public:
  // A ring for the calling thread (the loop's), watching io's reactor; null when the kernel
  // refuses one or an operation it needs, with the reason in `why_not`.
  static std::unique_ptr<io_ring> open(boost::asio::io_context& io, std::string& why_not);

  io_ring(const io_ring&) = delete;
  io_ring& operator=(const io_ring&) = delete;
  ~io_ring();

  // Queues a receive of at most `size` bytes into `data` (IORING_RECVSEND_POLL_FIRST: the
  // kernel waits for readiness before trying, as the read usually follows a response).
  void recv(ring_op& op, int fd, void* data, std::size_t size, std::shared_ptr<void> owner);
  // Queues a sendmsg (MSG_NOSIGNAL). `msg` and what it points to must stay valid until the
  // completion.
  void sendmsg(ring_op& op, int fd, const msghdr* msg, std::shared_ptr<void> owner);
  // Queues the pair described in the spec: a sendmsg of all of `msg` (MSG_NOSIGNAL), then a
  // receive as recv() queues it. One handler runs: `recv`'s when the message is out and the
  // receive has ended, or `send`'s when the send failed (a short send included). Only where
  // can_link_sends().
  void send_then_recv(ring_op& send, int fd, const msghdr* msg, ring_op& recv, void* data,
                      std::size_t size, std::shared_ptr<void> owner);
  // Whether the kernel takes send_then_recv's pair (below: whether to use it now).
  bool can_link_sends() const noexcept { return links_sends_; }
  // Whether send_then_recv is worth using now: the kernel skips a successful completion and retries
  // a short send itself (Linux 6.1 and IORING_FEAT_CQE_SKIP), and the loop is quiet, this
  // turn's wait having brought one completion at most. A busy loop keeps the send's own
  // completion: the wait it ends at once gives the clients time to send the next requests,
  // and the next wait then finds them (measured: the pair in every turn cost saturated
  // mixed traffic a quarter of its rps in two of three repetitions).
  bool links_sends() const noexcept { return links_sends_ && turn_completions_ <= 1; }
  // Queues the cancellation of `op` if it is pending; nothing otherwise.
  void cancel(ring_op& op) noexcept;

  // Watches `fd` for as long as the ring lives (one multishot IORING_OP_POLL_ADD, re-armed
  // whenever its completion lacks IORING_CQE_F_MORE): `ready(context)` runs on the loop's
  // thread, in a turn, at each wake-up of fd (a multishot poll completes on every write to
  // an eventfd, read or not; a re-armed one at once while fd is readable). One watch per
  // ring (asserted). For the pool's completion descriptor
  // (knit::asio_host::hand_over_completion_watch, completion_watch::each_write): a wake
  // costs no system call of its own, where Asio's wait costs an epoll_ctl to arm and an
  // epoll_wait, and the drain leaves the eventfd unread.
  void watch_readable(int fd, void (*ready)(void* context), void* context);

  // Runs io (io.run()) with the turns above until io is stopped. A handler that throws is
  // logged to `err` and the loop goes on, as run_event_loop does.
  void run(boost::asio::io_context& io, log_writer& err);

  // Whether the ring runs with SINGLE_ISSUER | DEFER_TASKRUN (the banner says it).
  bool deferred() const noexcept { return deferred_; }

 private:
  io_ring() = default;
  // A submission slot: a full SQ is submitted first. try_sqe: null when even that fails;
  // next_sqe throws std::system_error then.
  io_uring_sqe* try_sqe() noexcept;
  io_uring_sqe* next_sqe();
  void turns(boost::asio::io_context& io);
  void arm_reactor_poll();
  void arm_watch();
  void complete(const io_uring_cqe& cqe);
  void link(ring_op& op, std::shared_ptr<void> owner, io_uring_sqe* sqe);
  void unlink(ring_op& op) noexcept;
  // A completion ends `op` (and, for the receive of a pair, the send whose success posted
  // nothing): the owner it held, which the caller passes to the handler or drops.
  std::shared_ptr<void> end(ring_op& op) noexcept;
  void prep_recv(io_uring_sqe* sqe, int fd, void* data, std::size_t size) const noexcept;

  io_uring ring_{};
  bool ready_ = false;  // ring_ was set up (the destructor closes it)
  bool deferred_ = false;
  bool links_sends_ = false;
  std::size_t turn_completions_ = 0;  // the completions this turn's wait brought
  bool turns_queued_ = false;         // run(): the turns' handler is posted and has not started
  // The reactor's descriptor became readable (its poll's completion) since the last turn
  // that ran the reactor, or that run took a full batch: the next turn runs it (and does not
  // wait before).
  bool reactor_due_ = true;
  int reactor_fd_ = -1;
  int watch_fd_ = -1;  // watch_readable's descriptor, or -1
  void (*watch_ready_)(void*) = nullptr;
  void* watch_context_ = nullptr;
  ring_op* pending_ = nullptr;  // every submitted, not yet completed operation
  std::size_t pending_count_ = 0;
};

// A completion's result (bytes, or -errno) as the error Asio's operation would give: a
// cancelled one as operation_aborted, a read of 0 bytes as end of stream.
boost::system::error_code ring_error(int result, bool is_read);

}  // namespace knit_server
