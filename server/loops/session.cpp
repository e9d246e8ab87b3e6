// The session's read -> route -> write chain, narrated step by step in the manner of Beast's
// examples. How it stops, expires and closes is in session_upkeep.cpp.
#include "loops/session.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <exception>
#include <system_error>
#include <tuple>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)
#include "loops/drained_read.hpp"
#include "loops/process_status.hpp"
#include "loops/server.hpp"

namespace knit_server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using clock_type = std::chrono::steady_clock;

namespace {

// What a heavy page's reservation allows for its status line and headers (about 90 bytes:
// status, Content-Type, Content-Length, Connection), before the head is serialized.
constexpr std::size_t kHeadBytes = 256;
// The most one read of a request's head asks for (pipelined requests may come with it).
constexpr std::size_t kReadChunk = 8 * 1024;

// A ring completion's result (bytes, or -errno) as the error Asio's operation would give:
// a cancelled one as operation_aborted, a read of 0 bytes as end of stream.
beast::error_code ring_error(int result, bool is_read) {
  if (result == -ECANCELED) return net::error::operation_aborted;
  if (result < 0) return beast::error_code(-result, net::error::get_system_category());
  if (result == 0 && is_read) return net::error::eof;
  return {};
}

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

session::session(socket_type&& socket, server& srv)
    : socket_(std::move(socket)),
      ring_(srv.ring()),
      exec_(srv.threading().executor_for(socket_.get_executor())),
      server_(srv) {}

session::~session() {
  // The socket closes with socket_. Telling the server last lets it report "drained" only
  // once this connection is really gone.
  server_.detach(*this);
}

void session::run() {
  // Registered only now that a shared_ptr owns the session: from here on the server's
  // stop() and sweep may reach it, and in multi mode they need weak_from_this().
  if (!server_.attach(*this)) return;  // stopping: the connection closes unanswered
  // Responses are written with a synchronous write_some first (write_response), which must
  // take what the kernel takes now and never block the loop. Asio's asynchronous
  // operations work alike either way.
  beast::error_code ec;
  socket_.non_blocking(true, ec);
  if (ec) return;  // the connection is already unusable: it closes unanswered
  // We are on the accept loop's thread; the chain starts on the session's own.
  exec_.enter([self = shared_from_this()] { self->do_read(); });
}

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

  head_reader_ = request_head_reader(server_config::kHeaderLimit);
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
  if (ring_ != nullptr) {
    // The ring's receive, submitted with the turn's other operations; the kernel waits for
    // the bytes (io_ring.hpp).
    const net::mutable_buffer into = buffer_.prepare(room);
    return ring_->recv(ring_read_, socket_.native_handle(), into.data(), into.size(),
                       shared_from_this());
  }
  start_asio(
      [this, room](auto&& handler) {
        // A drained_buffer: after a read that emptied the socket the next one waits for epoll
        // (drained_read.hpp).
        socket_.async_read_some(drained_buffer(buffer_.prepare(room)),
                                std::forward<decltype(handler)>(handler));
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
  buffer_.commit(bytes);
  check_head();
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

void session::end_with_batch() {
  // The read of a pipelined request ended the connection while the responses to the requests
  // before it wait in batch_: they were answered, so they still go out, within the idle
  // timeout (a write that outlives it is reset: expire()). Then the session ends.
  if (batch_.empty()) return;
  phase_ = phase::writing;
  set_deadline(deadline_after(server_.config().idle_timeout));
  server_.counters().writes.fetch_add(1, std::memory_order_relaxed);
  start_asio(
      [this](auto&& handler) {
        net::async_write(socket_, net::buffer(batch_), std::forward<decltype(handler)>(handler));
      },
      [self = shared_from_this()](beast::error_code, std::size_t) {
        self->batch_parked_.release();
        self->batch_.clear();
      });
}

void session::handle_request() {
  phase_ = phase::handling;
  request_read_at_ = clock_type::now();  // the latency metric's start
  set_deadline(clock_type::time_point::max());
  auto& req = parser_->get();

  // Remember what the response depends on before the body is moved away.
  // The parser's flags cover every Connection field (the message's keep_alive() reads only
  // the first); "close" wins over an HTTP/1.0 "keep-alive" (RFC 9112 9.3).
  keep_alive_ = parser_->keep_alive() && !head_reader_.connection_close();
  http10_ = req.version() == 10;
  head_only_ = req.method() == http::verb::head;
  route_ = match_route(req.method(), req.target());
  server_.counters().count(route_);

  // The stop has begun (after the drain delay) and this request arrived whole only now, or
  // waited pipelined behind the one in progress: it was not started. 503 + Retry-After tells
  // the client to retry (elsewhere: the listener is closed); no worker is touched. The
  // connection closes after the last request already received (send_response). The
  // requests in progress when the stop began finish as usual.
  if (server_.stopping()) {
    fill_overloaded(res_);
    return send_response();
  }

  if (is_heavy(route_)) {
    // Unfinished writes already park more than the budget: shed before spending the CPU and
    // the memory of another page. /ping and 404 are small and never shed.
    if (server_.budget().over())
      return respond(server_.placement().refuse(refusal_reason::write_budget));
    // Hand the body over to the heavy route's placement: moved, never copied. Inline, the
    // route runs right here and start() returns its outcome; so it does for a call it will
    // not start (admission control, a full pool). On a pool, a worker runs it and the outcome
    // comes to respond() later from the event loop; this session stays alive meanwhile
    // because the completion holds a shared_ptr to it.
    std::optional<heavy_outcome> now = server_.placement().start(
        route_, std::move(req.body()),
        [self = shared_from_this()](heavy_outcome&& out) { self->respond(std::move(out)); });
    if (now) respond(std::move(*now));
    return;
  }

  // /ping, the operations endpoints and 404 are cheap: answer them here, on the session's
  // thread, without the pool.
  try {
    if (route_ == route::ping) {
      fill_copy(res_, http::status::ok, content_type::json,
                server_.ping_body(std::chrono::system_clock::now()));
    } else if (route_ == route::plaintext) {
      fill_plaintext(res_, std::chrono::system_clock::now());
    } else if (is_ops_endpoint(route_) && server_.status()) {
      answer_ops_endpoint(*server_.status());
    } else {
      fill_not_found(res_);
    }
  } catch (const std::exception&) {
    fill_error(res_, http::status::internal_server_error);
  }
  send_response();
}

void session::answer_ops_endpoint(const process_status& status) {
  switch (route_) {
    case route::livez:
      // The process reads, routes and answers: it can serve. (Once the stop has begun, the
      // stop's own answer comes first: handle_request.)
      fill_copy(res_, http::status::ok, content_type::text, "ok\n");
      break;
    case route::readyz: {
      const readiness r = status.assess(clock_type::now());
      fill_copy(res_, static_cast<http::status>(readiness_status(r)), content_type::text,
                readiness_body(r));
      break;
    }
    case route::metrics:
      fill(res_, http::status::ok, content_type::prometheus,
           status.metrics_page(clock_type::now()));
      break;
    default: fill_not_found(res_); break;
  }
}

void session::respond(heavy_outcome&& out) noexcept {
  // The heavy call's outcome, inline or back on the host thread, as the placement built it.
  // It must not throw: in pooled mode we are inside the pool's completion delivery.
  try {
    const bool page = out.what == heavy_result::ok;
    fill(res_, std::move(out));
    // The page exists now; it is written only if it fits in the write budget. A pool may have
    // admitted many calls before the first of their pages took the room: the ones that do not
    // fit get the shed 503 (counted, not noted for /readyz), and the page is freed with the
    // next response.
    if (page) {
      if (auto room = server_.budget().try_reserve(res_.body.size() + kHeadBytes)) {
        parked_ = std::move(*room);
      } else {
        server_.rejected().count(refusal_reason::write_budget);
        fill_overloaded(res_);
      }
    }
    send_response();
  } catch (const std::exception&) {
    // Out of memory while building the response: drop the connection, keep the server.
    cancel_ring_ops();
    beast::error_code ignored;
    socket_.close(ignored);
  }
}

void session::refuse(http::status status) {
  // The request could not be parsed: answer it, then close.
  server_.counters().count(route::not_found);
  route_ = route::not_found;
  request_read_at_ = clock_type::now();
  phase_ = phase::handling;
  keep_alive_ = false;
  http10_ = false;
  head_only_ = false;
  fill_error(res_, status);
  send_response();
}

void session::send_response() {
  phase_ = phase::writing;

  // Keep the connection open only if the client wants that and the server is not stopping,
  // or, stopping, while another request already received waits behind this one: it gets the
  // stop's 503 in its turn, and the last response says Connection: close. (RFC 9112 9.6: no
  // request is answered after a response that announced the close.)
  const bool keep = keep_alive_ && (!server_.stopping() || next_request_received());
  serialize_head(head_, res_,
                 !keep     ? connection_header::close
                 : http10_ ? connection_header::keep_alive
                           : connection_header::none);

  // A client that does not read its response cannot hold the connection forever either.
  set_deadline(deadline_after(server_.config().idle_timeout));
  publish_buffered_bytes();
  // Counted until on_write: the strings stay allocated and the kernel queues up to its cap. A
  // heavy page has its reservation already (respond); the rest are small.
  if (parked_.bytes() == 0) parked_ = server_.budget().reserve(head_.size() + res_.body.size());

  // Pipelined: the next request is already here and cheap to answer. Keep this response in
  // batch_ and answer that one first; both leave in one write. Not while stopping (each
  // response then decides the close on its own), and not past kBatchBytes.
  const std::size_t body_bytes = head_only_ ? 0 : res_.body.size();
  if (keep && !server_.stopping() && batch_.size() + head_.size() + body_bytes <= kBatchBytes &&
      next_request_is_cheap()) {
    batch_ += head_;
    if (!head_only_) batch_ += res_.body;
    batch_parked_ = server_.budget().reserve(batch_.size());
    parked_.release();
    // Answered: timed now, as its bytes will not change; they leave with the batch.
    record_response();
    return do_read();
  }
  write_response(!keep);
}

bool session::next_request_is_cheap() const {
  // The whole head of the next request must be here (the head check's verdict on the raw
  // bytes, as check_head will judge them); its request line then says its route. A head
  // that check_head will refuse is answered at once too (refuse, then the close).
  std::string_view rest(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  request_head_reader probe(server_config::kHeaderLimit);
  const head_verdict verdict = probe.feed(rest);
  if (verdict == head_verdict::need_more) return false;
  if (verdict != head_verdict::complete) return true;
  rest.remove_prefix(probe.skip());
  const std::size_t method_end = rest.find(' ');
  if (method_end == std::string_view::npos) return true;  // the parser refuses it
  const std::size_t target_end = rest.find(' ', method_end + 1);
  if (target_end == std::string_view::npos) return true;
  // GET and HEAD: a request that has a body may wait for it (or for a 100 Continue).
  const http::verb method = http::string_to_verb(rest.substr(0, method_end));
  if (method != http::verb::get && method != http::verb::head) return false;
  return !is_heavy(match_route(method, rest.substr(method_end + 1, target_end - method_end - 1)));
}

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
      if (buffer_.capacity() > kKeepBytes) buffer_.shrink_to_fit();
      if (in_reactor_) in_reactor_ = !leave_reactor(socket_);
      ring_linked_ = true;
      const net::mutable_buffer into =
          buffer_.prepare(std::min<std::size_t>(buffer_.max_size(), kReadChunk));
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
  const auto took = clock_type::now() - request_read_at_;
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
  buffer_.commit(static_cast<std::size_t>(result));
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
