// reactor_wake: lets an event loop thread wait somewhere other than Asio's reactor (in an
// io_uring, say) and still be woken by everything Asio's own loop would be woken by, a post
// from another thread included.
//
// Spec.
//   Fact 1 (Asio 1.81, detail/impl/scheduler.ipp): a handler posted from a thread that is not
//     inside the io_context's run()/poll() goes on the scheduler's queue under its mutex, and
//     interrupts the reactor (epoll_reactor::interrupt: epoll_ctl MOD of its eventfd, which
//     makes the reactor's epoll descriptor readable) only when no thread waits on the
//     scheduler's condition and the flag task_interrupted_ is false. io_context::stop() does
//     the same. Socket readiness and timers (a timerfd in the same epoll set) make the
//     descriptor readable on their own.
//   Fact 2 (same file): task_interrupted_ turns false only when a thread enters the reactor to
//     block in it (run(), run_one()); every run of the reactor ends with it true again
//     (task_cleanup), and poll() never clears it, because the thread that polls will look at
//     the queue again by itself. So a loop that calls io_context::poll() once per turn and
//     blocks elsewhere is never interrupted by another thread's post: that handler waits
//     until something else wakes the loop (a lost wake).
//   arm_reactor_wake(io) closes that gap. Called on the loop's thread after poll(), before
//   the thread blocks waiting for reactor_fd(io) to become readable, it takes the scheduler's
//   mutex and, when the queue holds nothing but the reactor's own task (nothing is ready),
//   sets task_interrupted_ false: from then on the first post from another thread (or a
//   stop) interrupts the reactor and reactor_fd becomes readable (fact 1). When a handler is
//   already queued (posted after poll() looked), it returns false and leaves the flag alone:
//   the caller must poll again instead of blocking. So it does when io is stopped: a stop()
//   that came before the arm (after the loop's last look at stopped()) found the flag set
//   and interrupted nothing (scheduler::stop_all_threads), so the caller must look again. Both
//   under the mutex the posting thread takes: the queue cannot change between the look and the
//   flag. Partner: the poster's wake_one_thread_and_unlock (reads the flag under the same mutex,
//   sets it true before interrupting, so one wait gets at most one interrupt), and the next
//   poll(), whose task_cleanup sets it true again.
//
//   Fact 3 (same file, scheduler::poll and work_cleanup): a handler posted from inside another
//     handler of a one-thread io_context goes on that thread's private queue and is counted in
//     its private_outstanding_work, which reaches the scheduler's outstanding_work_ only when
//     the outer handler returns. A poll() nested in that handler moves the operations to the
//     main queue but not their count, and each one it runs counts one unit of work finished:
//     the count falls below the work that exists, reaches 0, and the io_context stops (a
//     work guard does not help: its unit is counted down too). A loop whose turns run inside
//     one handler of io.run() (io_ring.hpp) polls this way every turn.
//   poll_inside_handler(io) moves that count to outstanding_work_ first, then polls: the
//   count then follows the operations. Partner: the outer handler's work_cleanup, which adds
//   what is left in the count (nothing, or what was posted after the last poll) when it
//   returns.
//
//   Fact 4 (same file, do_poll_one): poll() runs the reactor (epoll_wait(…, 0)) each time the
//     reactor's task comes to the front of the queue, and again until a run finds nothing; it
//     returns when the queue is empty or holds only the task. Between a loop's turns the task
//     is at the front (task_cleanup puts it at the end after each run; this thread's posts
//     wait on its private queue, other threads' go behind it).
//   poll_queued_inside_handler(io) runs what is queued without the reactor's epoll_wait, for a
//   loop that knows reactor_fd has not become readable since the last poll (nothing for the
//   reactor to find): it takes the task out of the queue under the scheduler's mutex, polls,
//   and puts it back at the end (also when a handler throws). It disarms as the reactor's run
//   would (task_interrupted_ true). Anywhere but at the front, the task is left alone and the
//   poll is a full one.
//
//   Fact 5 (detail/impl/epoll_reactor.ipp, run): one run of the reactor is one epoll_wait of at
//     most 128 events (kAsioEpollBatch). A run that finds something is followed by a second
//     one in the same poll (fact 4) that usually finds nothing: two epoll_waits for every
//     readiness a loop is woken for.
//   poll_reactor_once_inside_handler(io) runs the reactor once (one epoll_wait(…, 0)), queues
//   what it found, and runs the queue as poll_queued_inside_handler does, without a second
//   run. When that run may have taken a full batch (more ready descriptors may wait on
//   epoll's list, and no new wake comes for them) it says so, and the caller must run the
//   reactor again before it blocks. A run that took less than a batch left nothing on the list
//   but level-triggered entries (Asio's timerfd), whose next event wakes the descriptor's
//   pollers again (ep_poll_callback wakes them whether or not the entry is still listed).
//
// Only for the Asio this was read against (Boost 1.81, the epoll reactor on Linux):
// kReactorWakeActive is false anywhere else, and a loop that needs it must wait in Asio's
// own run() instead. tests/server/reactor_wake_test.cpp forces both interleavings (a post
// after the arm wakes the descriptor; a post between poll() and the arm makes the arm
// refuse) and runs a waiting loop against posting threads that would hang on a lost wake.
#pragma once

#include <cstddef>

#include <boost/asio/io_context.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION == 108100 && defined(__linux__) && \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_DISABLE_EPOLL)
#define KNIT_REACTOR_WAKE 1
#else
#define KNIT_REACTOR_WAKE 0
#endif

namespace knit_server {

// Whether reactor_fd and arm_reactor_wake work with this Asio.
inline constexpr bool kReactorWakeActive = KNIT_REACTOR_WAKE == 1;

// The epoll descriptor of io's reactor (made now if io has none yet): readable while Asio has
// something for its loop (a socket's event, a timer's expiry, after arm_reactor_wake a post
// from another thread or a stop). Owned by io. -1 where !kReactorWakeActive.
int reactor_fd(boost::asio::io_context& io);

// io.poll(), from inside one of io's handlers on its one loop thread (concurrency hint 1),
// without losing count of the work that handler posted (fact 3). Where !kReactorWakeActive,
// io.poll().
std::size_t poll_inside_handler(boost::asio::io_context& io);

// poll_inside_handler without running the reactor (fact 4): for a turn after which
// reactor_fd(io) has not become readable. Where !kReactorWakeActive, io.poll().
std::size_t poll_queued_inside_handler(boost::asio::io_context& io);

// Asio's epoll_wait batch (fact 5).
inline constexpr std::size_t kAsioEpollBatch = 128;

// What poll_reactor_once_inside_handler did: the handlers it ran, and whether the reactor's
// run may have left ready descriptors behind (run it again before blocking).
struct reactor_pass {
  std::size_t handlers = 0;
  bool may_have_left = false;
};

// poll_inside_handler with one run of the reactor instead of runs until one finds nothing
// (fact 5): for a turn after which reactor_fd(io) became readable. Where !kReactorWakeActive,
// io.poll() (which drains the reactor itself).
reactor_pass poll_reactor_once_inside_handler(boost::asio::io_context& io);

// On io's one loop thread, after io.poll() and before blocking until reactor_fd(io) is
// readable: true when nothing is ready and any later post from another thread, or a stop,
// makes reactor_fd readable; false when a handler is already queued or io is stopped (poll
// again or leave, do not block). Always false where !kReactorWakeActive.
bool arm_reactor_wake(boost::asio::io_context& io);

}  // namespace knit_server
