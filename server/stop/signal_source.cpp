// signalfd read on the event loop; the protocol is in signal_source.hpp.
#include "stop/signal_source.hpp"

#include <pthread.h>

#include <cerrno>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/system/system_error.hpp>

namespace knit_server {

sigset_t signal_source::handled() noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : {SIGINT, SIGTERM, SIGUSR1}) sigaddset(&set, signo);
  return set;
}

void signal_source::block_in_this_thread() noexcept {
  const sigset_t set = handled();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

namespace {

int open_signalfd() {
  const sigset_t set = signal_source::handled();
  const int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    throw boost::system::system_error(errno, boost::system::system_category(), "signalfd");
  }
  return fd;
}

}  // namespace

signal_source::signal_source(const boost::asio::any_io_executor& executor)
    : fd_(executor, open_signalfd()) {}

void signal_source::start(std::function<void(int)> on_signal) {
  on_signal_ = std::move(on_signal);
  read_next();
}

void signal_source::cancel() noexcept {
  cancelled_ = true;
  boost::system::error_code ignored;
  fd_.cancel(ignored);
}

void signal_source::read_next() {
  if (cancelled_) return;
  // A signalfd read returns whole signalfd_siginfo records, one per pending signal.
  boost::asio::async_read(fd_, boost::asio::buffer(&info_, sizeof info_),
                          [this](const boost::system::error_code& ec, std::size_t) {
                            if (ec) return;  // cancelled (the server has drained), or closed
                            const int signo = static_cast<int>(info_.ssi_signo);
                            on_signal_(signo);
                            read_next();
                          });
}

}  // namespace knit_server
