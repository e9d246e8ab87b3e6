// KNIT_HOSTS>1 with a knit pool: the control thread builds the pool, so it is the pool's
// builder, and the builder is who retires and replaces the worker of a call that an event
// loop declared stuck or gave up (knit/pool_host.hpp, "Stuck calls"). It does that in
// pool::drain when the pool's completion fd fires; the builder submits nothing itself, so
// nothing else would watch that fd. This keeps a wait on it for as long as the control loop
// runs (main stops that loop explicitly, so the wait may keep it busy forever).
#pragma once

#include <memory>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <knit/knit.hpp>

namespace knit_server {

class pool_builder_watch {
 public:
  // On the thread that built `pool` and runs `io`; both must outlive this object.
  pool_builder_watch(boost::asio::io_context& io, knit::pool& pool)
      : state_(std::make_shared<state>(io, pool)) {
    arm(state_);
  }
  ~pool_builder_watch() {
    state_->closed = true;
    boost::system::error_code ignored;
    state_->fd.cancel(ignored);
  }
  pool_builder_watch(const pool_builder_watch&) = delete;
  pool_builder_watch& operator=(const pool_builder_watch&) = delete;

 private:
  struct state {
    state(boost::asio::io_context& io, knit::pool& p)
        : pool(p), fd(io, ::dup(p.completion_fd())) {}  // a dup: closing it leaves the pool's
    knit::pool& pool;
    boost::asio::posix::stream_descriptor fd;
    bool closed = false;
  };

  // The handler holds the state, so a wait completing after the destructor finds it closed.
  static void arm(const std::shared_ptr<state>& s) {
    s->fd.async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [s](const boost::system::error_code& ec) {
                       if (ec || s->closed) return;
                       s->pool.drain();  // takes the seats the hosts asked to retire
                       arm(s);
                     });
  }

  std::shared_ptr<state> state_;
};

}  // namespace knit_server
