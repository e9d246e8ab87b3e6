// One event-loop thread: epoll dispatch, error accounting, reconnects and the measured window.
#include "worker.hpp"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "closed_loop.hpp"
#include "open_loop.hpp"

namespace knit_load {

Worker::Worker(const Endpoint& target, Nanos timeout, const std::vector<SliceSpec>& slices)
    : target_(target), timeout_(timeout), read_buf_(kReadBufferBytes) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the timer is the one registration without a Connection
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev) < 0) {
    throw std::system_error(errno, std::generic_category(), "epoll_ctl(timerfd)");
  }
  for (const SliceSpec& spec : slices) {
    auto slice = std::make_unique<RouteSlice>();
    slice->route_index = spec.route_index;
    slice->request = spec.request;
    slice->head_request = spec.head_request;
    slice->connections = spec.connections;
    slice->rate = spec.rate;
    if (spec.rate > 0.0) {
      slice->driver = std::make_unique<OpenLoopDriver>(*this, spec.rate);
    } else {
      slice->driver = std::make_unique<ClosedLoopDriver>(*this);
    }
    for (std::uint32_t i = 0; i < spec.connections; ++i) {
      connections_.push_back(std::make_unique<Connection>(epoll_fd_, slice.get()));
    }
    slices_.push_back(std::move(slice));
  }
}

Worker::~Worker() {
  connections_.clear();  // closes the sockets before the epoll set goes
  if (timer_fd_ >= 0) ::close(timer_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void Worker::run(const std::function<Nanos()>& start, Nanos duration) {
  // The default 50 us timer slack would make every open-loop send up to 50 us late, and the
  // CO-corrected latency would charge that lateness to the server.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  warm_up();
  const Nanos t0 = start();
  end_ = t0 + duration;
  running_ = true;
  for (auto& slice : slices_) slice->driver->start(t0);
  Nanos now = now_ns();
  for (auto& c : connections_) {
    if (c->state() == Connection::State::kIdle) c->slice()->driver->on_ready(*c, now);
  }

  Nanos next_housekeeping = t0 + kHousekeepingPeriod;
  epoll_event events[kMaxEvents];
  while (true) {
    now = now_ns();
    if (now >= end_) break;
    if (now >= next_housekeeping) {
      housekeeping(now);
      next_housekeeping = now + kHousekeepingPeriod;
    }
    Nanos deadline = std::min(end_, next_housekeeping);
    for (auto& slice : slices_) {
      slice->driver->dispatch(now);
      deadline = std::min(deadline, slice->driver->next_deadline());
    }
    arm_timer(deadline);

    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      // One clock read per event: latency is taken when this response is handled, not when
      // the batch started, so a long batch does not skew it.
      now = now_ns();
      if (now >= end_) break;
      if (events[i].data.ptr == nullptr) {
        std::uint64_t expirations = 0;
        [[maybe_unused]] const ssize_t r = ::read(timer_fd_, &expirations, sizeof expirations);
        armed_ = kNever;
        continue;
      }
      handle(*static_cast<Connection*>(events[i].data.ptr), events[i].events, now);
    }
  }
  finish();
}

void Worker::warm_up() {
  // Open every connection and wait (bounded) for the handshakes, so t0 is not charged with
  // connection setup and the first open-loop requests do not queue behind it.
  const Nanos start = now_ns();
  for (auto& c : connections_) on_connect_result(*c, c->connect(target_, start), start);
  epoll_event events[kMaxEvents];
  while (now_ns() - start < kWarmupLimit) {
    const bool connecting = std::any_of(connections_.begin(), connections_.end(), [](auto& c) {
      return c->state() == Connection::State::kConnecting;
    });
    if (!connecting) break;
    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, 10);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) continue;  // timer not armed yet
      handle(*static_cast<Connection*>(events[i].data.ptr), events[i].events, now_ns());
    }
  }
}

void Worker::send(Connection& c, Nanos intended, Nanos now) {
  RouteSlice& slice = *c.slice();
  ++slice.stats.sent;
  if (c.send(*slice.request, slice.head_request, intended, now) == Connection::Event::kIoError) {
    fail(c, ErrorKind::kRead, now);
  }
}

void Worker::handle(Connection& c, std::uint32_t events, Nanos now) {
  const Connection::Event ev = c.on_event(events, read_buf_.data(), read_buf_.size());
  RouteSlice& slice = *c.slice();
  switch (ev) {
    case Connection::Event::kNone:
      return;
    case Connection::Event::kConnected:
    case Connection::Event::kConnectFailed:
      on_connect_result(c, ev, now);
      return;
    case Connection::Event::kResponse:
      if (running_) {
        slice.stats.record_response(c.status(), c.intended_at(), c.sent_at(), now);
        slice.completed.store(slice.completed.load(std::memory_order_relaxed) + 1,
                              std::memory_order_relaxed);
      }
      if (c.keep_alive()) {
        if (running_) slice.driver->on_ready(c, now);
      } else {
        reopen(c, now);  // "connection: close" or a close-delimited body: not an error
      }
      return;
    case Connection::Event::kIoError:
      fail(c, ErrorKind::kRead, now);
      return;
    case Connection::Event::kParseError:
      fail(c, ErrorKind::kParse, now);
      return;
    case Connection::Event::kPeerClosed:
      reopen(c, now);  // the server dropped an idle keep-alive connection
      return;
  }
}

void Worker::on_connect_result(Connection& c, Connection::Event ev, Nanos now) {
  if (ev == Connection::Event::kConnected) {
    if (running_) c.slice()->driver->on_ready(c, now);
  } else if (ev == Connection::Event::kConnectFailed) {
    if (running_) c.slice()->stats.record_error(ErrorKind::kConnect);
    // Retry after a pause rather than at once, so a dead server is not hammered in a loop.
    c.retry_at = now + kConnectRetryDelay;
  }
}

void Worker::fail(Connection& c, ErrorKind kind, Nanos now) {
  if (running_) c.slice()->stats.record_error(kind);
  reopen(c, now);
}

void Worker::reopen(Connection& c, Nanos now) {
  c.slice()->driver->on_lost(c);
  on_connect_result(c, c.connect(target_, now), now);
}

void Worker::housekeeping(Nanos now) {
  for (auto& conn : connections_) {
    Connection& c = *conn;
    switch (c.state()) {
      case Connection::State::kBusy:
        if (now - c.sent_at() >= timeout_) fail(c, ErrorKind::kTimeout, now);
        break;
      case Connection::State::kConnecting:
        if (now - c.connect_started_at() >= timeout_) {
          c.close();
          on_connect_result(c, Connection::Event::kConnectFailed, now);
        }
        break;
      case Connection::State::kDown:
        if (now >= c.retry_at) on_connect_result(c, c.connect(target_, now), now);
        break;
      case Connection::State::kIdle:
        break;
    }
  }
}

void Worker::arm_timer(Nanos deadline) {
  if (deadline == armed_) return;
  itimerspec spec{};
  spec.it_value.tv_sec = deadline / kNanosPerSecond;
  spec.it_value.tv_nsec = deadline % kNanosPerSecond;
  if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) == 0) armed_ = deadline;
}

void Worker::finish() {
  running_ = false;
  for (auto& c : connections_) {
    if (c->state() == Connection::State::kBusy) ++c->slice()->stats.in_flight_at_end;
    c->close();
  }
  for (auto& slice : slices_) slice->stats.backlog_at_end = slice->driver->backlog(end_);
}

}  // namespace knit_load
