// The session's upkeep beside its read -> route -> write chain (session*.cpp): how it stops and
// expires (stop(), check_deadline(), the requests already received that the stop still
// answers, the reset that frees the kernel's send queue), the lingering close after
// "Connection: close", and the bytes its buffers hold between requests.
#include "loops/session.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string_view>

#include <boost/beast/core/bind_handler.hpp>

#include "loops/coarse_clock.hpp"
#include "loops/server.hpp"

namespace knit_server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

// How long a closing connection waits for the client to close its side, and how much it
// reads meanwhile. Enough for a client to finish sending a refused 64 KiB body; a client
// that keeps sending beyond that is not worth waiting for.
constexpr std::chrono::milliseconds kLingerTimeout{2000};
constexpr std::size_t kLingerLimit = 256 * 1024;
constexpr std::size_t kLingerChunk = 16 * 1024;
static_assert(kLingerChunk <= server_config::kReadBufferLimit,
              "do_linger prepares kLingerChunk bytes of the bounded read buffer");

}  // namespace

void session::stop() {
  // A session already being destroyed (its destructor waits in server::detach) has nothing
  // left to stop: from_any_thread() then does nothing.
  exec_.from_any_thread(*this, [](session& s) { s.stop_here(); });
}

void session::check_deadline(clock_type::time_point now) {
  // Overdue as seen from here; expire() looks again on the session's thread.
  if (now < deadline_.load(std::memory_order_relaxed)) return;
  exec_.from_any_thread(*this, [now](session& s) { s.expire(now); });
}

void session::stop_here() {
  // Idle between requests, with no byte of a next request received: nothing has started,
  // so nothing is lost by closing now. Cancel the read; on_read sees operation_aborted and
  // the session ends. A read that has already completed is not affected: its request is
  // answered, with Connection: close.
  if (phase_ == phase::reading && buffer_.size() == 0 && parser_ && !parser_->got_some()) {
    beast::error_code ignored;
    socket_.cancel(ignored);
    cancel_ring_ops();
  }
  // A response handed to the ring with the next head's receive (session.hpp): the receive
  // is cancelled, and ends the session, if the response is out; a response still on its way
  // keeps the grace below (the cancel then finds no receive started).
  if (ring_linked_) ring_->cancel(ring_read_);
  // Otherwise a request is in progress: send_response sees server_.stopping() and answers
  // with Connection: close (after it, each request already received behind it gets 503, the
  // last with the close), and on_write closes once the response is out. A read or write
  // already pending gets at most the stop grace more (server_config::stop_grace: a slow
  // client must not hold up the exit for a whole idle timeout). A route running in the
  // pool has no deadline here (the stop deadline bounds it: stop_deadline.hpp), and its
  // response write gets the grace period when it starts.
  if (phase_ != phase::handling) {
    set_deadline(std::min(deadline_.load(std::memory_order_relaxed),
                          coarse_steady_now() + server_.config().stop_grace));
  }
}

bool session::next_request_received() {
  if (!took_received_) {
    // What the client sent while the current request ran has been received too: it sits in
    // the kernel's queue because the session reads nothing while it handles a request. Take
    // what is there now, up to the buffer's room; available() > 0 means read_some returns
    // at once.
    took_received_ = true;
    beast::error_code ec;
    const std::size_t queued = socket_.available(ec);
    const std::size_t room = std::min(queued, buffer_.max_size() - buffer_.size());
    if (!ec && room > 0) {
      const std::size_t got = socket_.read_some(buffer_.prepare(room), ec);
      if (!ec) commit_read(got);
    }
  }
  // A whole head is a request received; bytes the head check refuses will get their 400 or
  // 501 (refuse) as the last answer. Part of a head is not a request: the connection closes.
  request_head_reader probe(server_config::kHeaderLimit);
  const auto* data = static_cast<const char*>(buffer_.data().data());
  return probe.feed(std::string_view(data, buffer_.size())) != head_verdict::need_more;
}

clock_type::time_point session::deadline_after(clock_type::duration timeout) const {
  if (server_.stopping()) {
    timeout = std::min<clock_type::duration>(timeout, server_.config().stop_grace);
  }
  return coarse_steady_now() + timeout;  // enforced by the sweep: a tick's lag is nothing
}

void session::expire(clock_type::time_point now) {
  if (now < deadline_.load(std::memory_order_relaxed)) return;
  const std::size_t unacknowledged = unacknowledged_bytes();
  // Closing, the response out of our hands but not all acknowledged after the linger wait:
  // a slow client still reading gets the rest of the idle timeout before we cut it.
  if (phase_ == phase::closing && unacknowledged > 0 && now < closing_until_) {
    set_deadline(closing_until_);
    return;
  }
  // Too slow. Cancel the pending read or write; its handler sees operation_aborted, does
  // not start another, and the session ends. A response's pair (session.hpp) is looked at
  // again after the grace: a cancel that came between its send's end and its receive's
  // start finds neither.
  set_deadline(ring_linked_ ? now + server_.config().stop_grace : clock_type::time_point::max());
  // A write cut short, or bytes the kernel still holds for the client: reset, so the kernel
  // frees them now. A graceful close would keep them queued (up to the SO_SNDBUF cap) for as
  // long as the client keeps its connection open, outside every bound of ours. A pair whose
  // bytes are all acknowledged is an idle connection, or a send the kernel is about to end:
  // the cancel below ends the one or cuts the other (its failure then resets:
  // ring_write_done).
  if ((phase_ == phase::writing && !ring_linked_) || unacknowledged > 0) return reset();
  beast::error_code ignored;
  socket_.cancel(ignored);
  cancel_ring_ops();
}

void session::cancel_ring_ops() noexcept {
  if (ring_ == nullptr) return;
  ring_->cancel(ring_read_);
  ring_->cancel(ring_write_);
}

std::size_t session::unacknowledged_bytes() noexcept {
  int queued = 0;
  if (::ioctl(socket_.native_handle(), SIOCOUTQ, &queued) != 0 || queued < 0) return 0;
  return static_cast<std::size_t>(queued);
}

void session::reset() noexcept {
  // close(), not the socket's destructor: Asio's destructor turns a linger the user set back
  // off (so that it never blocks), which would make this a graceful close after all. close()
  // also cancels the pending operation: its handler sees operation_aborted and the session
  // ends.
  // A ring operation holds the socket's file: the reset happens once it is cancelled.
  cancel_ring_ops();
  // A response's pair: its receive takes the descriptor when it starts, so the descriptor
  // stays open until the pair has ended (ring_write_done, linked_read_done reset then).
  if (ring_linked_) {
    reset_after_pair_ = true;
    return;
  }
  beast::error_code ignored;
  socket_.set_option(net::socket_base::linger(true, 0), ignored);
  socket_.close(ignored);
}

void session::release_large_buffers() noexcept {
  // The response is out; a big body (a 781 KB page for a 64 KiB /ssr name) must not stay
  // allocated for as long as the client keeps the connection idle. Small buffers are kept:
  // reusing them is what makes the next /ping allocate nothing.
  if (res_.body.capacity() > kKeepBytes) std::string().swap(res_.body);
  if (head_.capacity() > kKeepBytes) std::string().swap(head_);
  if (batch_.capacity() > kKeepBytes) std::string().swap(batch_);
  release_large_read_buffer();
}

void session::release_large_read_buffer() noexcept {
  // The read buffer keeps one read's chunk: the next request's read takes that much room at
  // once (an idle connection's armed read holds it anyway), and freeing it here only to
  // allocate it again there cost every keep-alive request a malloc and a free of 8 KiB.
  // shrink_to_fit keeps the bytes of a pipelined request already received.
  if (buffer_.capacity() > kReadChunk) buffer_.shrink_to_fit();
}

std::size_t session::buffered_bytes() const noexcept {
  return exec_.shared() ? published_bytes_.load(std::memory_order_relaxed) : measure_buffers();
}

void session::publish_buffered_bytes() noexcept {
  if (exec_.shared()) published_bytes_.store(measure_buffers(), std::memory_order_relaxed);
}

std::size_t session::measure_buffers() const noexcept {
  std::size_t bytes =
      buffer_.capacity() + res_.body.capacity() + head_.capacity() + batch_.capacity();
  if (parser_) bytes += parser_->get().body().capacity();
  return bytes;
}

void session::do_close() {
  phase_ = phase::closing;

  // Send a TCP FIN: the client reads the whole response, then the end of the stream.
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);

  // Then wait for the client to close its side, discarding whatever it still sends.
  // Closing at once could destroy the response we just sent: a socket closed with unread
  // input (the rest of a refused 413 body, a pipelined request) sends RST instead of FIN,
  // and the client's kernel may drop our response before the client has read it.
  buffer_.clear();
  lingered_ = 0;
  closing_until_ = deadline_after(server_.config().idle_timeout);
  set_deadline(deadline_after(
      std::min<clock_type::duration>(kLingerTimeout, server_.config().idle_timeout)));
  do_linger();
}

void session::do_linger() {
  // prepare() without commit() hands out the same bytes every time: discarding costs no
  // memory beyond one chunk.
  start_asio(
      [this](auto&& handler) {
        socket_.async_read_some(buffer_.prepare(kLingerChunk),
                                std::forward<decltype(handler)>(handler));
      },
      beast::bind_front_handler(&session::on_linger, shared_from_this()));
}

void session::on_linger(beast::error_code ec, std::size_t bytes) {
  // End of stream (the client closed, the usual case), deadline or reset: we are done, and
  // returning lets the session and its socket go.
  if (ec) return;
  lingered_ += bytes;
  if (lingered_ > kLingerLimit) return;
  do_linger();
}

}  // namespace knit_server
