// Where a connection's handlers run: on the one host thread, or (KNIT_MODE=multi) on a strand of
// its own.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

namespace knit_server {

// The threading policy of one connection (or of the accept loop), chosen once when it is
// made, so the code that uses it reads the same in every mode:
//   - one thread (every mode but multi): a handler runs as it is, on the host thread, and a
//     call from "another thread" is a call from the same one, made directly;
//   - strand (multi): N threads run the io_context, as in the classic multi-threaded Beast
//     server. Every handler is bound to the connection's own strand, so they run one at a
//     time, and a call from another thread is posted into it.
class connection_executor {
 public:
  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

  // `use_strand`: the io_context is run by more than one thread (multi mode).
  connection_executor(boost::asio::io_context::executor_type io, bool use_strand) {
    if (use_strand) strand_.emplace(boost::asio::make_strand(io));
  }

  // True when other threads may look at the connection (multi mode): what they read must
  // then be published to them (an atomic), not read from the connection's own state.
  bool shared() const noexcept { return strand_.has_value(); }

  // Starts an asynchronous operation: initiate(handler), the handler bound to the strand.
  template <class Initiate, class Handler>
  void start(Initiate&& initiate, Handler&& handler) {
    if (strand_) {
      std::forward<Initiate>(initiate)(
          boost::asio::bind_executor(*strand_, std::forward<Handler>(handler)));
    } else {
      std::forward<Initiate>(initiate)(std::forward<Handler>(handler));
    }
  }

  // Runs fn() on the connection's thread from where a new connection is handed over (the
  // accept loop, its strand in multi mode): now, or dispatched into the strand.
  template <class Fn>
  void enter(Fn&& fn) {
    if (strand_) {
      boost::asio::dispatch(*strand_, std::forward<Fn>(fn));
    } else {
      std::forward<Fn>(fn)();
    }
  }

  // Runs fn(owner) on the connection's thread from any thread (stop, the deadline sweep):
  // now, or posted into the strand while a shared_ptr keeps `owner` alive. Posts nothing
  // for an owner already being destroyed (weak_from_this() fails): nothing is left to do.
  template <class Owner, class Fn>
  void from_any_thread(Owner& owner, Fn fn) {
    if (!strand_) return fn(owner);
    if (auto self = owner.weak_from_this().lock()) {
      boost::asio::post(*strand_, [self = std::move(self), fn = std::move(fn)] { fn(*self); });
    }
  }

  // Runs fn() on the executor's thread from any thread, for an owner that outlives the loop
  // (the listener): now, or posted into the strand.
  template <class Fn>
  void post(Fn&& fn) {
    if (strand_) {
      boost::asio::post(*strand_, std::forward<Fn>(fn));
    } else {
      std::forward<Fn>(fn)();
    }
  }

 private:
  std::optional<strand_type> strand_;  // multi mode only
};

}  // namespace knit_server
