// signal_source: SIGINT, SIGTERM and SIGUSR1 as reads on the event loop (signalfd), never as an
// asynchronous handler.
//
// Protocol:
//   1. block_in_this_thread() is the first thing main() does, before any thread exists. Every
//      thread the process starts later (pool workers, their replacements, asio thread_pool
//      threads, multi mode's io threads) inherits the blocked mask, so the kernel delivers
//      none of the three signals to any thread: it keeps them pending for the process.
//   2. A signal_source opens a signalfd for the three and reads it on an executor of the
//      event loop. Each read takes one pending signal and calls on_signal(signo) there.
//   3. cancel() stops reading; a signal after that stays pending until the process exits.
// A signal sent before step 2 (even before "listening on") waits, pending, for the first
// read: it is never lost and never runs the default action. Two of the same signal sent
// before a read coalesce into one (standard signals are not queued).
//
// Why not a signal handler (boost::asio::signal_set): a process-directed signal goes to any
// thread that does not block it, and under ThreadSanitizer a signal that lands in a thread
// parked in a system call TSan does not intercept (a pool worker in futex wait) is deferred
// until that thread next enters the runtime, which an idle worker never does: SIGTERM was
// sometimes never handled (about 1 run in 40 of a stop test under TSan, in every mode). With
// no handler there is nothing to defer, and no thread is ever interrupted (no EINTR in the
// workers).
#pragma once

#include <sys/signalfd.h>

#include <csignal>
#include <functional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace knit_server {

class signal_source {
 public:
  // The signals the server takes: SIGINT, SIGTERM (stop) and SIGUSR1 (print stats).
  static sigset_t handled() noexcept;

  // Blocks handled() in the calling thread. Call first in main(), before any thread starts.
  static void block_in_this_thread() noexcept;

  // Opens the signalfd (throws boost::system::system_error when it cannot). Handlers run on
  // `executor`.
  explicit signal_source(const boost::asio::any_io_executor& executor);

  // Calls on_signal(signo) on the executor for every signal, until cancel().
  void start(std::function<void(int signo)> on_signal);

  // Stops reading; the pending read completes with operation_aborted and calls nothing.
  // Call on the executor (as on_signal runs there, it may call cancel() itself).
  void cancel() noexcept;

 private:
  void read_next();

  boost::asio::posix::stream_descriptor fd_;
  signalfd_siginfo info_{};
  std::function<void(int)> on_signal_;
  bool cancelled_ = false;  // set by cancel(), read before each re-arm (both on the executor)
};

}  // namespace knit_server
