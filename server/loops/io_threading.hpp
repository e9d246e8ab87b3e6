// The threading chosen at start-up (one thread per event loop, or KNIT_MODE=multi's N io
// threads on its one loop) as the policies the server's parts apply.
#pragma once

#include <mutex>

#include <boost/asio/io_context.hpp>

#include "config.hpp"
#include "loops/connection_executor.hpp"

namespace knit_server {

// The server, the listener, each session and the stop path take their threading from here,
// so none of them asks which mode it is in: each applies the policy it is given
// (connection_executor.hpp names the two).
class io_threading {
 public:
  explicit io_threading(exec_mode mode) noexcept
      : policy_(mode == exec_mode::multi_thread ? thread_policy::strand : thread_policy::own_loop) {
  }

  // True when more than one thread runs the io_context (multi mode).
  bool multi() const noexcept { return policy_ == thread_policy::strand; }

  thread_policy policy() const noexcept { return policy_; }

  // The executor policy for one connection or for the accept loop.
  connection_executor executor_for(boost::asio::io_context::executor_type io) const {
    return connection_executor(io, policy_);
  }

  // Guards state that every connection shares (the session set), which the control thread
  // (the stop, its deadline) and, in multi mode, the other io threads look at too.
  std::unique_lock<std::mutex> lock(std::mutex& m) const { return std::unique_lock(m); }

 private:
  thread_policy policy_;
};

}  // namespace knit_server
