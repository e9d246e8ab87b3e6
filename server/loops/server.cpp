// The shared server state and the graceful stop: close the acceptor, stop every session,
// report when drained.
#include "loops/server.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include "loops/session.hpp"

namespace knit_server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

server::server(net::io_context& io, const server_config& cfg, heavy_placement& placement,
               connection_limit& limit, write_budget& budget, const process_status* status)
    : io_(io),
      cfg_(cfg),
      threading_(cfg.mode),
      placement_(placement),
      limit_(limit),
      budget_(budget),
      metrics_(threading_.multi()),
      status_(status),
      ping_cache_(threading_.multi()),
      listener_(io, *this),
      sweep_timer_(io),
      sweep_period_(std::clamp<std::chrono::milliseconds>(
          cfg.idle_timeout / 8, std::chrono::milliseconds(10), std::chrono::milliseconds(1000))) {}

tcp::endpoint server::listen() { return listen_on(cfg_.port, false); }

tcp::endpoint server::listen_shared(std::uint16_t port) { return listen_on(port, true); }

tcp::endpoint server::listen_on(std::uint16_t port, bool share_port) {
  const net::ip::address address = cfg_.host == "localhost"
                                       ? net::ip::address(net::ip::address_v4::loopback())
                                       : net::ip::make_address(cfg_.host);
  return listener_.open(tcp::endpoint(address, port), share_port);
}

void server::start() { listener_.run(); }

void server::stop(std::function<void()> drained) {
  auto guard = lock();
  if (stopping()) return;
  stopping_.store(true, std::memory_order_relaxed);
  drained_ = std::move(drained);

  // 1. No new connections.
  listener_.stop();

  // 2. Every session closes as soon as it has nothing in progress. session::stop() may
  //    cancel a read (in multi mode: on the session's strand) but never destroys
  //    the session here, so iterating the set is safe.
  for (session* s : sessions_) s->stop();

  // 3. Already drained? Report it from the event loop, like every other completion.
  if (sessions_.empty()) net::post(io_, std::exchange(drained_, nullptr));
}

void server::cut_slow_clients() {
  // Every deadline counts as passed. Like the sweep, this cancels but never destroys a
  // session (the cancelled handler runs later), so iterating the set is safe.
  auto guard = lock();
  for (session* s : sessions_) s->check_deadline(std::chrono::steady_clock::time_point::max());
}

std::size_t server::connections() const {
  auto guard = lock();
  return sessions_.size();
}

std::size_t server::buffered_bytes() const {
  auto guard = lock();
  std::size_t total = 0;
  for (const session* s : sessions_) total += s->buffered_bytes();
  return total;
}

bool server::attach(session& s) {
  auto guard = lock();
  // Under the same lock as stop()'s store: a session either is in the set stop() walks, or
  // sees stopping here and closes.
  if (stopping()) return false;
  sessions_.insert(&s);
  if (!sweeping_) start_sweep();
  return true;
}

void server::detach(session& s) {
  limit_.release();  // every session holds a place, attached or not (listener.cpp)
  auto guard = lock();
  sessions_.erase(&s);
  if (stopping() && sessions_.empty() && drained_) {
    sweep_timer_.cancel();
    // exchange: `drained` is reported once, however the last sessions go.
    net::post(io_, std::exchange(drained_, nullptr));
  }
}

void server::start_sweep() {
  // Called with the lock held (multi mode): the timer is not safe to use from two threads.
  sweeping_ = true;
  sweep_timer_.expires_after(sweep_period_);
  sweep_timer_.async_wait([this](boost::system::error_code ec) { on_sweep(ec); });
}

void server::on_sweep(boost::system::error_code ec) {
  auto guard = lock();
  sweeping_ = false;
  // No connections, no timer: an idle server wakes up for nothing (the reference benchmark
  // measures idle CPU). The next attach() starts the sweep again.
  if (ec || sessions_.empty()) return;

  // check_deadline() may cancel a socket (multi mode: on its strand), never destroy a session
  // (the cancelled handler runs later), so iterating the set is safe.
  const auto now = std::chrono::steady_clock::now();
  for (session* s : sessions_) s->check_deadline(now);
  start_sweep();
}

}  // namespace knit_server
