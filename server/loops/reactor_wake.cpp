// The two reaches into Asio 1.81's scheduler and reactor that reactor_wake needs (the spec is
// in reactor_wake.hpp).
#include "loops/reactor_wake.hpp"

#if KNIT_REACTOR_WAKE
#include "loops/asio_private.hpp"

#include <boost/asio/detail/call_stack.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/op_queue.hpp>
#include <boost/asio/detail/scheduler.hpp>
#endif

namespace knit_server {

#if KNIT_REACTOR_WAKE
namespace detail = boost::asio::detail;

// The members reached (asio_private.hpp).
namespace asio_private {
struct scheduler_mutex {
  friend auto member_of(scheduler_mutex);
};
struct scheduler_queue {
  friend auto member_of(scheduler_queue);
};
struct scheduler_task {
  friend auto member_of(scheduler_task);
};
struct scheduler_task_operation {
  friend auto member_of(scheduler_task_operation);
};
struct scheduler_task_interrupted {
  friend auto member_of(scheduler_task_interrupted);
};
struct scheduler_stopped {
  friend auto member_of(scheduler_stopped);
};
struct reactor_epoll_fd {
  friend auto member_of(reactor_epoll_fd);
};
template struct member<scheduler_mutex, &detail::scheduler::mutex_>;
template struct member<scheduler_queue, &detail::scheduler::op_queue_>;
template struct member<scheduler_task, &detail::scheduler::task_>;
template struct member<scheduler_task_operation, &detail::scheduler::task_operation_>;
template struct member<scheduler_task_interrupted, &detail::scheduler::task_interrupted_>;
template struct member<scheduler_stopped, &detail::scheduler::stopped_>;
template struct member<reactor_epoll_fd, &detail::epoll_reactor::epoll_fd_>;
}  // namespace asio_private

namespace {
using namespace asio_private;
}  // namespace

int reactor_fd(boost::asio::io_context& io) {
  // The reactor is a service of io, made on first use and handed to the scheduler as its
  // task (init_task), as the first socket or timer does.
  auto& reactor = boost::asio::use_service<detail::epoll_reactor>(io);
  reactor.init_task();
  return reactor.*member_of(reactor_epoll_fd{});
}

bool arm_reactor_wake(boost::asio::io_context& io) {
  // io_context's implementation is a service of its own, the scheduler (handed back
  // directly, with no registry lookup: this runs once per turn).
  auto& sched = boost::asio::use_service<detail::scheduler>(io);
  detail::conditionally_enabled_mutex::scoped_lock lock(sched.*member_of(scheduler_mutex{}));
  // No reactor yet: nothing could interrupt it. (reactor_fd() makes one.)
  if (sched.*member_of(scheduler_task{}) == nullptr) return false;
  // A stop that came after the loop last looked at stopped() (and before this lock) found
  // the flag set and interrupted nothing: nothing will wake the descriptor for it.
  if (sched.*member_of(scheduler_stopped{})) return false;
  // After poll(), the queue holds the reactor's task (put back at its end by task_cleanup);
  // anything else is a handler posted since, which must run before the loop may block.
  auto& queue = sched.*member_of(scheduler_queue{});
  detail::scheduler_operation* first = queue.front();
  if (first == nullptr || detail::op_queue_access::next(first) != nullptr) return false;
  sched.*member_of(scheduler_task_interrupted{}) = false;
  return true;
}

std::size_t poll_inside_handler(boost::asio::io_context& io) {
  auto& sched = boost::asio::use_service<detail::scheduler>(io);
  // The handler this thread is inside of (its thread_info): what was posted from it sits on
  // its private queue, counted in its private_outstanding_work. poll() moves the operations
  // to the main queue and not their count; moved here first, the count follows them.
  using thread_stack = detail::call_stack<detail::thread_context, detail::thread_info_base>;
  if (auto* outer = static_cast<detail::scheduler_thread_info*>(thread_stack::contains(&sched))) {
    for (; outer->private_outstanding_work > 0; --outer->private_outstanding_work) {
      sched.work_started();
    }
  }
  return io.poll();
}

std::size_t poll_queued_inside_handler(boost::asio::io_context& io) {
  auto& sched = boost::asio::use_service<detail::scheduler>(io);
  auto& mutex = sched.*member_of(scheduler_mutex{});
  auto& queue = sched.*member_of(scheduler_queue{});
  detail::scheduler_operation* const task = &(sched.*member_of(scheduler_task_operation{}));
  {
    detail::conditionally_enabled_mutex::scoped_lock lock(mutex);
    // Disarmed, as the reactor's run would leave it (fact 2): the loop is not blocked now, and
    // a poster need not interrupt it.
    sched.*member_of(scheduler_task_interrupted{}) = true;
    // The reactor's task is at the front between turns (nothing is queued before it: posts
    // from this thread wait on its private queue, other threads' behind it). Anywhere else,
    // or not there: a full poll, which puts the queue back in that order.
    if (sched.*member_of(scheduler_task{}) == nullptr || queue.front() != task) {
      lock.unlock();
      return poll_inside_handler(io);
    }
    queue.pop();
  }
  // Put back at the end even if a handler throws: without it the reactor would never run
  // again.
  struct put_back {
    detail::conditionally_enabled_mutex& mutex;
    detail::op_queue<detail::scheduler_operation>& queue;
    detail::scheduler_operation* task;
    ~put_back() {
      detail::conditionally_enabled_mutex::scoped_lock lock(mutex);
      queue.push(task);
    }
  } on_exit{mutex, queue, task};
  // With no task queued, poll() runs handlers until the queue is empty and never the reactor.
  return poll_inside_handler(io);
}

reactor_pass poll_reactor_once_inside_handler(boost::asio::io_context& io) {
  auto& sched = boost::asio::use_service<detail::scheduler>(io);
  detail::scheduler_task* const reactor = sched.*member_of(scheduler_task{});
  if (reactor == nullptr) return {poll_inside_handler(io), false};  // nothing to wait in
  // What the scheduler does when the reactor's task reaches the front (do_poll_one, then
  // task_cleanup): one run without waiting, its operations queued for this thread. Inside a
  // handler they go to its private queue (post_deferred_completions), which the poll below
  // moves to the main queue, as a nested poll does; no work is counted for them, as none is
  // there (the operations counted theirs when they started).
  detail::op_queue<detail::scheduler_operation> ready;
  reactor->run(0, ready);
  // Each descriptor comes back from epoll_wait at most once, and the run turns every event but
  // its interrupter's and its timerfd's into one operation (timers that expired add more): a
  // run that took a full batch made at least kAsioEpollBatch - 2 of them.
  std::size_t made = 0;
  for (detail::scheduler_operation* op = ready.front(); op != nullptr;
       op = detail::op_queue_access::next(op)) {
    ++made;
  }
  sched.post_deferred_completions(ready);
  return {poll_queued_inside_handler(io), made + 2 >= kAsioEpollBatch};
}
#else
std::size_t poll_inside_handler(boost::asio::io_context& io) { return io.poll(); }
std::size_t poll_queued_inside_handler(boost::asio::io_context& io) { return io.poll(); }
reactor_pass poll_reactor_once_inside_handler(boost::asio::io_context& io) {
  return {io.poll(), false};
}
int reactor_fd(boost::asio::io_context&) { return -1; }
bool arm_reactor_wake(boost::asio::io_context&) { return false; }
#endif

}  // namespace knit_server
