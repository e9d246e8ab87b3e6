// Where a connection's handlers run: on its loop's one thread, or (KNIT_MODE=multi) on a strand
// of its own; and how another thread gets something done there.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

namespace knit_server {

// Who runs a connection's handlers, and how a call from another thread reaches them.
enum class thread_policy : std::uint8_t {
  // Every mode but multi: each event loop (KNIT_HOSTS of them) has one thread of its own,
  // and the control thread (signals, the stop deadline) reaches a connection by posting to
  // the connection's io_context.
  own_loop,
  // KNIT_MODE=multi: N threads run one io_context; each connection has its own strand.
  strand,
};

// The threading policy of one connection (or of the accept loop), chosen once when it is
// made, so the code that uses it reads the same in every mode:
//   - own_loop: a handler runs as it is (one thread runs the io_context), and a call from
//     another thread is posted to the io_context;
//   - strand: every handler is bound to the connection's own strand, as in the classic
//     multi-threaded Beast server, and a call from another thread is posted into it.
class connection_executor {
 public:
  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

  connection_executor(boost::asio::io_context::executor_type io, thread_policy policy) : io_(io) {
    if (policy == thread_policy::strand) strand_.emplace(boost::asio::make_strand(io));
  }

  // Whether other threads may look at the connection: what they read must then be
  // published to them (an atomic), not read from the connection's state. In every mode
  // now, since the control thread that stops and counts the connections runs no loop.
  bool shared() const noexcept { return true; }

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
  // accept loop, on the same io_context; its strand in multi mode): now, or dispatched into
  // the strand.
  template <class Fn>
  void enter(Fn&& fn) {
    if (strand_) {
      boost::asio::dispatch(*strand_, std::forward<Fn>(fn));
    } else {
      std::forward<Fn>(fn)();
    }
  }

  // Runs fn(owner) on the connection's thread from any thread (stop, the deadline sweep):
  // posted while a shared_ptr keeps `owner` alive. Posts nothing for an owner already being
  // destroyed (weak_from_this() fails): nothing is left to do.
  template <class Owner, class Fn>
  void from_any_thread(Owner& owner, Fn fn) {
    if (auto self = owner.weak_from_this().lock()) {
      auto run = [self = std::move(self), fn = std::move(fn)] { fn(*self); };
      if (strand_) {
        boost::asio::post(*strand_, std::move(run));
      } else {
        boost::asio::post(io_, std::move(run));
      }
    }
  }

  // Runs fn() on the executor's thread from any thread, for an owner that outlives the loop
  // (the listener): posted.
  template <class Fn>
  void post(Fn&& fn) {
    if (strand_) {
      boost::asio::post(*strand_, std::forward<Fn>(fn));
    } else {
      boost::asio::post(io_, std::forward<Fn>(fn));
    }
  }

 private:
  boost::asio::io_context::executor_type io_;  // where other threads post (own_loop)
  std::optional<strand_type> strand_;          // multi mode only
};

}  // namespace knit_server
