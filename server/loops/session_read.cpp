// The session's reading: a request's head (through the ring or Asio), its checks, its body
// (Beast's parser), and where a read that ended sends the session. The rest of the chain is
// in session.cpp (routing) and session_write.cpp (the response).
#include "loops/session.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)
#include "loops/drained_read.hpp"
#include "loops/server.hpp"

namespace knit_server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

// True when the parser rejected the bytes (as opposed to the connection failing).
bool is_parse_error(const beast::error_code& ec) {
  static const std::error_category& http_category =
      beast::error_code(http::error::bad_method).category();
  return ec.category() == http_category;
}

// RFC 9112 section 3.2: an HTTP/1.1 request must carry exactly one Host field, and a
// request with more than one is invalid whatever its version. Either gets 400.
template <class Request>
bool has_valid_host(const Request& req) {
  const auto hosts = req.count(http::field::host);
  return hosts == 1 || (hosts == 0 && req.version() < 11);
}

}  // namespace

void session::do_read() {
  // A trampoline: start_request() may answer a pipelined request and write its response
  // without waiting, and come back here; that call only asks for another turn.
  if (in_read_loop_) {
    read_again_ = true;
    return;
  }
  in_read_loop_ = true;
  do {
    read_again_ = false;
    start_request();
  } while (read_again_);
  in_read_loop_ = false;
}

void session::start_request() {
  phase_ = phase::reading;

  // Make a fresh parser for this request: Beast parsers are single-use. Emplacing into the
  // same optional reuses its storage, and the old parser's fields, freed first, leave the
  // arena empty for the new one: parsing allocates nothing.
  parser_.emplace(std::piecewise_construct, std::make_tuple(),
                  std::make_tuple(arena_allocator<char>(arena_)));
  parser_->header_limit(static_cast<std::uint32_t>(server_config::kHeaderLimit));
  parser_->body_limit(server_config::kBodyLimit);

  // The client has idle_timeout to deliver the whole request, starting now. That bounds an
  // idle keep-alive connection and a slow client dribbling its header alike. (The server's
  // sweep enforces it; see server.hpp.)
  set_deadline(deadline_after(server_.config().idle_timeout));

  // A head the batch judged (send_response) is not read again; feed() returns its verdict.
  if (!std::exchange(head_judged_, false)) {
    head_reader_ = request_head_reader(server_config::kHeaderLimit);
  }
  check_head();
}

void session::check_head() {
  // The raw head is judged before the parser sees it (http_framing.hpp: where Beast is
  // lenient about framing). A pipelined request already in buffer_ is judged, and parsed,
  // without touching the socket.
  const auto* data = static_cast<const char*>(buffer_.data().data());
  switch (head_reader_.feed(std::string_view(data, buffer_.size()))) {
    case head_verdict::need_more: break;
    case head_verdict::complete: {
      // The empty lines before the request line go; the whole head is in the buffer, so the
      // parser takes it in one put() (and holds it to the header limit exactly).
      buffer_.consume(head_reader_.skip());
      beast::error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      return on_read_header(ec, used);
    }
    case head_verdict::bad_request: return refuse(http::status::bad_request);
    case head_verdict::not_implemented: return refuse(http::status::not_implemented);
    case head_verdict::too_large: return refuse(http::status::request_header_fields_too_large);
  }
  // More of the head is needed. It fits: the reader refuses a head over kHeaderLimit, and the
  // buffer holds twice that.
  const std::size_t room = std::min<std::size_t>(buffer_.max_size() - buffer_.size(), kReadChunk);
  KNIT_ASSERT(room > 0);
  const net::mutable_buffer into = buffer_.prepare(room);
  // What a connection holds while it waits for its client (the read's room, a half-sent
  // head) is what a slow client makes it hold: the stats count it from now on, not only
  // from its next response.
  publish_buffered_bytes();
  if (ring_ != nullptr) {
    // The ring's receive, submitted with the turn's other operations; the kernel waits for
    // the bytes (io_ring.hpp).
    return ring_->recv(ring_read_, socket_.native_handle(), into.data(), into.size(),
                       shared_from_this());
  }
  start_asio(
      [this, into](auto&& handler) {
        // A drained_buffer: after a read that emptied the socket the next one waits for epoll
        // (drained_read.hpp).
        socket_.async_read_some(drained_buffer(into), std::forward<decltype(handler)>(handler));
      },
      beast::bind_front_handler(&session::on_read_head, shared_from_this()));
}

void session::ring_read_done(std::shared_ptr<void> owner, int result) {
  const auto self = std::static_pointer_cast<session>(std::move(owner));
  if (self->ring_linked_) return self->linked_read_done(result);
  self->on_read_head(ring_error(result, /*is_read=*/true),
                     result > 0 ? static_cast<std::size_t>(result) : 0);
}

void session::on_read_head(beast::error_code ec, std::size_t bytes) {
  // End of stream, a reset, or the deadline (operation_aborted): like a failed header read,
  // the session ends without an answer; bytes of an unfinished head are not a request.
  if (ec) return end_with_batch();
  commit_read(bytes);
  check_head();
}

void session::commit_read(std::size_t bytes) noexcept {
  buffer_.commit(bytes);
  read_since_response_ = true;
}

void session::on_read_header(beast::error_code ec, std::size_t bytes) {
  if (ec) return on_read(ec, bytes);
  if (!has_valid_host(parser_->get())) return refuse(http::status::bad_request);
  // RFC 9110 9.1: a method the server does not recognize SHOULD get 501. Then close, like
  // every refusal: such a request (llhttp refuses MKCOLA or an RTSP method outright) may be
  // framed by rules we do not know.
  if (parser_->get().method() == http::verb::unknown) {
    return refuse(http::status::not_implemented);
  }

  // No body (GET /ping): the request is complete.
  if (parser_->is_done()) return handle_request();

  // A body follows. A client that sent "Expect: 100-continue" waits for a go-ahead before
  // sending it; Node's server, and so the reference Hono server, gives it automatically. (A
  // body over the limit never gets here: the parser refuses its Content-Length already.)
  const auto& req = parser_->get();
  if (req.version() == 11 && beast::iequals(req[http::field::expect], "100-continue")) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    // The responses to pipelined requests before this one (batch_) go first.
    const std::array<net::const_buffer, 2> buffers{net::buffer(batch_),
                                                   net::buffer(kContinue.data(), kContinue.size())};
    server_.counters().writes.fetch_add(1, std::memory_order_relaxed);
    start_asio(
        [this, &buffers](auto&& handler) {
          net::async_write(socket_, buffers, std::forward<decltype(handler)>(handler));
        },
        beast::bind_front_handler(&session::on_continue, shared_from_this()));
    return;
  }
  do_read_body();
}

void session::on_continue(beast::error_code ec, std::size_t /*bytes*/) {
  batch_parked_.release();
  batch_.clear();
  if (ec) return;  // the client is gone
  do_read_body();
}

void session::do_read_body() {
  // The body usually came with the header: the parser takes what buffer_ holds here, and a
  // body complete in it goes on at once (http::async_read would do the same but post its
  // completion, which costs the loop an epoll_wait(0) before it runs).
  beast::error_code ec;
  while (buffer_.size() > 0 && !parser_->is_done()) {
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) ec = {};
    if (ec || used == 0) break;
  }
  if (ec || parser_->is_done()) return on_read(ec, 0);

  // Read the rest of the message into the parser's string body.
  read_since_response_ = true;
  start_asio(
      [this](auto&& handler) {
        http::async_read(socket_, buffer_, *parser_, std::forward<decltype(handler)>(handler));
      },
      beast::bind_front_handler(&session::on_read, shared_from_this()));
}

void session::on_read(beast::error_code ec, std::size_t /*bytes*/) {
  if (!ec) return handle_request();

  // The parser refused the request: answer it, then close, because after a bad message we
  // cannot know where the next one would start.
  if (ec == http::error::header_limit) return refuse(http::status::request_header_fields_too_large);
  if (ec == http::error::body_limit) return refuse(http::status::payload_too_large);
  // The request needs more than kReadBufferLimit bytes buffered at once: inside the header
  // (only when header_limit did not catch it first), or afterwards a chunk-size line, its
  // extensions or the trailer that never ends. The bytes are not a request we will take.
  if (ec == http::error::buffer_overflow) {
    return refuse(parser_->is_header_done() ? http::status::bad_request
                                            : http::status::request_header_fields_too_large);
  }
  if (is_parse_error(ec) && ec != http::error::end_of_stream &&
      ec != http::error::partial_message) {
    return refuse(http::status::bad_request);
  }

  // Everything else ends the connection without a response, and there is nobody to tell:
  //   end_of_stream      the client closed between requests, the normal end of keep-alive;
  //   partial_message    the client closed in the middle of a request;
  //   operation_aborted  the deadline passed (idle or too slow), or stop() closed an idle
  //                      connection;
  //   anything else      the connection failed (reset and the like).
  // Returning drops the last reference: the session is destroyed and the socket closed.
  end_with_batch();
}

}  // namespace knit_server
