// The session's writing: a response (and the pipelined ones held back with it) in one
// gathering write, what the kernel did not take at once, the pair that links a small
// response to the next head's receive in the ring, and what follows a write.
#include "loops/session.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_suffix.hpp>

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)
#include "loops/drained_read.hpp"
#include "loops/server.hpp"

namespace knit_server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

void session::write_response(bool close) {
  // The responses held back (batch_), then this one's head and body, in one gathering write.
  // HEAD: the same head, Content-Length included, and no body.
  const response_pieces buffers = pieces();
  const std::size_t total = net::buffer_size(buffers);
  server_.counters().writes.fetch_add(1, std::memory_order_relaxed);

  if (ring_ != nullptr) {
    // One sendmsg through the ring, submitted with the turn's other operations; on_write
    // runs from its completion (ring_write_done).
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      ring_iov_[i] = iovec{const_cast<void*>(buffers[i].data()), buffers[i].size()};
    }
    ring_msg_ = msghdr{};
    ring_msg_.msg_iov = ring_iov_.data();
    ring_msg_.msg_iovlen = ring_iov_.size();
    ring_total_ = total;
    ring_close_ = close;
    if (!close && buffer_.size() == 0 && total <= kKeepBytes && ring_->links_sends()) {
      // Keep-alive, with nothing of a next request received: its head's receive goes with
      // the send, one pair (io_ring::send_then_recv). What on_write would do before the next
      // read is done now where it must be: the timing (the send's success posts nothing),
      // the write budget's reservation (the pair may end only with the client's next
      // request: an idle connection must not hold it; the bytes, at most kKeepBytes, are in
      // the buffers a session keeps and counts anyway), the big input buffer given back
      // before the receive's room is taken, the socket out of Asio's epoll set. A bigger
      // response (a page) is sent alone, and released when its completion says it is out.
      record_response();
      parked_.release();
      batch_parked_.release();
      release_large_read_buffer();
      if (in_reactor_) in_reactor_ = !leave_reactor(socket_);
      ring_linked_ = true;
      const net::mutable_buffer into =
          buffer_.prepare(std::min<std::size_t>(buffer_.max_size(), kReadChunk));
      publish_buffered_bytes();  // the receive's room, held while the connection is idle
      return ring_->send_then_recv(ring_write_, socket_.native_handle(), &ring_msg_, ring_read_,
                                   into.data(), into.size(), shared_from_this());
    }
    return ring_->sendmsg(ring_write_, socket_.native_handle(), &ring_msg_, shared_from_this());
  }

  // First what the kernel takes now (the socket is non-blocking), usually all of it; then
  // on_write runs here, with no completion posted to the loop (a posted one costs the loop an
  // epoll_wait(0) before it runs).
  beast::error_code ec;
  const std::size_t sent = socket_.write_some(buffers, ec);
  if (ec != net::error::would_block && (ec || sent == total)) {
    wrote_at_once_ = true;
    return on_write(close, ec, sent);
  }

  write_rest(close, ec ? 0 : sent);
}

void session::ring_write_done(std::shared_ptr<void> owner, int result) {
  const auto self = std::static_pointer_cast<session>(std::move(owner));
  if (self->ring_linked_) {
    // A pair's send completes only when it failed (a short send too: MSG_WAITALL); its
    // receive ended with it, without a completion. A write cut short, or a connection that
    // failed: the session ends with a reset, as expire() ends a write cut short (the
    // response was timed when it was handed over).
    self->ring_linked_ = false;
    self->reset_after_pair_ = false;
    self->after_write(false, ring_error(result < 0 ? result : -EPIPE, /*is_read=*/false));
    return self->reset();
  }
  if (result < 0) return self->on_write(self->ring_close_, ring_error(result, false), 0);
  const auto sent = static_cast<std::size_t>(result);
  if (sent == self->ring_total_) return self->on_write(self->ring_close_, {}, sent);
  self->write_rest(self->ring_close_, sent);
}

void session::write_rest(bool close, std::size_t sent) {
  // The rest when the socket can take it.
  const response_pieces buffers = pieces();
  beast::buffers_suffix<response_pieces> rest(buffers);
  rest.consume(sent);
  server_.counters().writes.fetch_add(1, std::memory_order_relaxed);
  start_asio(
      [this, &rest](auto&& handler) {
        net::async_write(socket_, rest, std::forward<decltype(handler)>(handler));
      },
      beast::bind_front_handler(&session::on_write, shared_from_this(), close));
}

session::response_pieces session::pieces() const noexcept {
  return {net::buffer(batch_), net::buffer(head_),
          head_only_ ? net::const_buffer() : net::buffer(res_.body)};
}

void session::record_response() noexcept {
  // One response, timed from the request.
  last_response_at_ = clock_type::now();
  read_since_response_ = false;
  const auto took = last_response_at_ - request_read_at_;
  server_.metrics().record(route_, static_cast<unsigned>(res_.status),
                           static_cast<std::uint64_t>(
                               std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
}

void session::linked_read_done(int result) {
  // The pair's receive ended: its send is out whole (a failed one would have ended first).
  ring_linked_ = false;
  if (std::exchange(reset_after_pair_, false)) {
    // The deadline's reset, held while the receive could still take the descriptor: the
    // response's buffers go (no read starts: the error), then the reset.
    after_write(false, net::error::operation_aborted);
    return reset();
  }
  if (result <= 0) {
    // The client closed after its response, the connection failed, or the receive was
    // cancelled (a deadline, the stop): the session ends, as a failed head read ends it.
    const beast::error_code ec = ring_error(result, /*is_read=*/true);
    after_write(false, ec);
    return on_read_head(ec, 0);
  }
  // The next request's first bytes: in buffer_ before the stop's check in after_write,
  // which answers a request already received.
  commit_read(static_cast<std::size_t>(result));
  after_write(false, {});
}

void session::on_write(bool close, beast::error_code ec, std::size_t /*bytes*/) {
  // The response is out (or the client is gone).
  record_response();
  after_write(close, ec);
}

void session::after_write(bool close, beast::error_code ec) {
  const bool at_once = std::exchange(wrote_at_once_, false);
  // Written, or given up: either way the strings are about to be freed or reused.
  parked_.release();
  batch_parked_.release();
  batch_.clear();
  // The client is gone, or it stopped reading until the deadline passed.
  if (ec) return;

  // The response said "Connection: close", or the server began stopping while we wrote and
  // no request already received waits to be answered.
  if (close || (server_.stopping() && !next_request_received())) return do_close();

  // Keep-alive: read the next request (it may already be waiting in buffer_). The ring
  // reads it: Asio's reactor need not hear of this socket until an Asio operation needs it.
  if (ring_ != nullptr && in_reactor_) in_reactor_ = !leave_reactor(socket_);
  release_large_buffers();
  publish_buffered_bytes();
  // Written at once (write_response) with the next request already in buffer_ (pipelined):
  // answer it after the loop's other ready handlers, so one connection's pipeline does not
  // hold the loop. Otherwise read now: the head read is a drained_buffer, so when the last
  // read emptied the socket this costs no system call and the read waits for epoll
  // (drained_read.hpp).
  if (at_once && buffer_.size() > 0) {
    return exec_.from_any_thread(*this, [](session& s) { s.do_read(); });
  }
  do_read();
}

}  // namespace knit_server
