// The threading mode chosen at start-up (one host thread, or KNIT_MODE=multi's N io threads) as
// the policies the server's parts apply.
#pragma once

#include <mutex>

#include <boost/asio/io_context.hpp>

#include "config.hpp"
#include "connection_executor.hpp"

namespace knit_server {

// One host thread (every mode but multi) or N threads running one io_context (multi). The
// server, the listener, each session and the stop path take their threading from here, so
// none of them asks which mode it is in: each applies the policy it is given.
class io_threading {
 public:
  explicit io_threading(exec_mode mode) noexcept : multi_(mode == exec_mode::multi_thread) {}

  // True when more than one thread runs the io_context.
  bool multi() const noexcept { return multi_; }

  // The executor policy for one connection or for the accept loop: a strand of its own in
  // multi mode, the io_context's executor as it is otherwise.
  connection_executor executor_for(boost::asio::io_context::executor_type io) const {
    return connection_executor(io, multi_);
  }

  // Guards state that every connection shares (the session set): `m` is locked in multi mode
  // only; with one thread there is nobody to exclude, and no lock is taken.
  std::unique_lock<std::mutex> lock(std::mutex& m) const {
    return multi_ ? std::unique_lock(m) : std::unique_lock(m, std::defer_lock);
  }

 private:
  bool multi_;
};

}  // namespace knit_server
