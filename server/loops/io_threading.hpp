// The threading chosen at start-up (one host thread, one thread per host with KNIT_HOSTS>1, or
// KNIT_MODE=multi's N io threads) as the policies the server's parts apply.
#pragma once

#include <mutex>

#include <boost/asio/io_context.hpp>

#include "config.hpp"
#include "loops/connection_executor.hpp"

namespace knit_server {

// The server, the listener, each session and the stop path take their threading from here,
// so none of them asks which mode it is in: each applies the policy it is given
// (connection_executor.hpp names the three).
class io_threading {
 public:
  io_threading(exec_mode mode, unsigned hosts) noexcept
      : policy_(mode == exec_mode::multi_thread ? thread_policy::strand
                : hosts > 1                     ? thread_policy::own_loop
                                                : thread_policy::one_thread) {}

  // True when more than one thread runs the io_context (multi mode).
  bool multi() const noexcept { return policy_ == thread_policy::strand; }

  thread_policy policy() const noexcept { return policy_; }

  // The executor policy for one connection or for the accept loop.
  connection_executor executor_for(boost::asio::io_context::executor_type io) const {
    return connection_executor(io, policy_);
  }

  // Guards state that every connection shares (the session set): `m` is locked whenever
  // another thread may look at it (multi mode, KNIT_HOSTS>1); with one thread there is nobody
  // to exclude, and no lock is taken.
  std::unique_lock<std::mutex> lock(std::mutex& m) const {
    return policy_ != thread_policy::one_thread ? std::unique_lock(m)
                                                : std::unique_lock(m, std::defer_lock);
  }

 private:
  thread_policy policy_;
};

}  // namespace knit_server
