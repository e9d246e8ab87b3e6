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

load_worker::load_worker(const endpoint& target, nanos timeout,
                         const std::vector<slice_spec>& slices)
    : target_(target), timeout_(timeout), read_buf_(kReadBufferBytes) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the timer is the one registration without a client_connection
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev) < 0) {
    throw std::system_error(errno, std::generic_category(), "epoll_ctl(timerfd)");
  }
  for (const slice_spec& spec : slices) {
    auto slice = std::make_unique<route_slice>();
    slice->route_index = spec.route_index;
    slice->request = spec.request;
    slice->head_request = spec.head_request;
    slice->connections = spec.connections;
    slice->rate = spec.rate;
    if (spec.rate > 0.0) {
      slice->driver = std::make_unique<open_loop_driver>(*this, spec.rate);
    } else {
      slice->driver = std::make_unique<closed_loop_driver>(*this);
    }
    for (std::uint32_t i = 0; i < spec.connections; ++i) {
      connections_.push_back(std::make_unique<client_connection>(epoll_fd_, slice.get()));
    }
    slices_.push_back(std::move(slice));
  }
}

load_worker::~load_worker() {
  connections_.clear();  // closes the sockets before the epoll set goes
  if (timer_fd_ >= 0) ::close(timer_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void load_worker::run(const std::function<nanos()>& start, nanos duration) {
  // The default 50 us timer slack would make every open-loop send up to 50 us late, and the
  // CO-corrected latency would charge that lateness to the server.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  warm_up();
  const nanos t0 = start();
  end_ = t0 + duration;
  running_ = true;
  for (auto& slice : slices_) slice->driver->start(t0);
  nanos now = now_ns();
  for (auto& c : connections_) {
    if (c->state() == connection_state::kIdle) c->slice()->driver->on_ready(*c, now);
  }

  nanos next_housekeeping = t0 + kHousekeepingPeriod;
  epoll_event events[kMaxEvents];
  while (true) {
    now = now_ns();
    if (now >= end_) break;
    if (now >= next_housekeeping) {
      housekeeping(now);
      next_housekeeping = now + kHousekeepingPeriod;
    }
    nanos deadline = std::min(end_, next_housekeeping);
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
      handle(*static_cast<client_connection*>(events[i].data.ptr), events[i].events, now);
    }
  }
  finish();
}

void load_worker::warm_up() {
  // Open every connection and wait (bounded) for the handshakes, so t0 is not charged with
  // connection setup and the first open-loop requests do not queue behind it.
  const nanos start = now_ns();
  for (auto& c : connections_) on_connect_result(*c, c->connect(target_, start), start);
  epoll_event events[kMaxEvents];
  while (now_ns() - start < kWarmupLimit) {
    const bool connecting = std::any_of(connections_.begin(), connections_.end(), [](auto& c) {
      return c->state() == connection_state::kConnecting;
    });
    if (!connecting) break;
    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, 10);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) continue;  // timer not armed yet
      handle(*static_cast<client_connection*>(events[i].data.ptr), events[i].events, now_ns());
    }
  }
}

void load_worker::send(client_connection& c, nanos intended, nanos now) {
  route_slice& slice = *c.slice();
  ++slice.stats.sent;
  if (c.send(*slice.request, slice.head_request, intended, now) == connection_event::kIoError) {
    fail(c, error_kind::kRead, now);
  }
}

void load_worker::handle(client_connection& c, std::uint32_t events, nanos now) {
  const connection_event ev = c.on_event(events, read_buf_.data(), read_buf_.size());
  route_slice& slice = *c.slice();
  switch (ev) {
    case connection_event::kNone: return;
    case connection_event::kConnected:
    case connection_event::kConnectFailed: on_connect_result(c, ev, now); return;
    case connection_event::kResponse:
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
    case connection_event::kIoError: fail(c, error_kind::kRead, now); return;
    case connection_event::kParseError: fail(c, error_kind::kParse, now); return;
    case connection_event::kPeerClosed:
      reopen(c, now);  // the server dropped an idle keep-alive connection
      return;
  }
}

void load_worker::on_connect_result(client_connection& c, connection_event ev, nanos now) {
  if (ev == connection_event::kConnected) {
    if (running_) c.slice()->driver->on_ready(c, now);
  } else if (ev == connection_event::kConnectFailed) {
    if (running_) c.slice()->stats.record_error(error_kind::kConnect);
    // Retry after a pause rather than at once, so a dead server is not hammered in a loop.
    c.retry_at = now + kConnectRetryDelay;
  }
}

void load_worker::fail(client_connection& c, error_kind kind, nanos now) {
  if (running_) c.slice()->stats.record_error(kind);
  reopen(c, now);
}

void load_worker::reopen(client_connection& c, nanos now) {
  c.slice()->driver->on_lost(c);
  on_connect_result(c, c.connect(target_, now), now);
}

void load_worker::housekeeping(nanos now) {
  for (auto& conn : connections_) {
    client_connection& c = *conn;
    switch (c.state()) {
      case connection_state::kBusy:
        if (now - c.sent_at() >= timeout_) fail(c, error_kind::kTimeout, now);
        break;
      case connection_state::kConnecting:
        if (now - c.connect_started_at() >= timeout_) {
          c.close();
          on_connect_result(c, connection_event::kConnectFailed, now);
        }
        break;
      case connection_state::kDown:
        if (now >= c.retry_at) on_connect_result(c, c.connect(target_, now), now);
        break;
      case connection_state::kIdle: break;
    }
  }
}

void load_worker::arm_timer(nanos deadline) {
  if (deadline == armed_) return;
  itimerspec spec{};
  spec.it_value.tv_sec = deadline / kNanosPerSecond;
  spec.it_value.tv_nsec = deadline % kNanosPerSecond;
  if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) == 0) armed_ = deadline;
}

void load_worker::finish() {
  running_ = false;
  for (auto& c : connections_) {
    if (c->state() == connection_state::kBusy) ++c->slice()->stats.in_flight_at_end;
    c->close();
  }
  for (auto& slice : slices_) slice->stats.backlog_at_end = slice->driver->backlog(end_);
}

}  // namespace knit_load
