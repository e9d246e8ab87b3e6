// The session's read -> route -> write chain, narrated step by step in the manner of Beast's
// examples.
#include "session.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <array>
#include <exception>
#include <system_error>
#include <tuple>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "../src/invariant.hpp"  // KNIT_ASSERT
#include "process_status.hpp"
#include "server.hpp"

namespace knit_server {

namespace beast = boost::beast;
namespace http = beast::http;
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
// What a heavy page's reservation allows for its status line and headers (about 90 bytes:
// status, Content-Type, Content-Length, Connection), before the head is serialized.
constexpr std::size_t kHeadBytes = 256;
// The most one read of a request's head asks for (pipelined requests may come with it).
constexpr std::size_t kReadChunk = 8 * 1024;
static_assert(kLingerChunk <= server_config::kReadBufferLimit,
              "do_linger prepares kLingerChunk bytes of the bounded read buffer");

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
  // We are on the accept loop's thread; the chain starts on the session's own.
  exec_.enter([self = shared_from_this()] { self->do_read(); });
}

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
  }
  // Otherwise a request is in progress: send_response sees server_.stopping() and answers
  // with Connection: close, and on_write closes once the response is out. A read or write
  // already pending gets at most the stop grace more (server_config::stop_grace: a slow
  // client must not hold up the exit for a whole idle timeout). A route running in the
  // pool has no deadline here (the stop deadline bounds it: stop_deadline.hpp), and its
  // response write gets the grace period when it starts.
  if (phase_ != phase::handling) {
    set_deadline(std::min(deadline_.load(std::memory_order_relaxed),
                          clock_type::now() + server_.config().stop_grace));
  }
}

clock_type::time_point session::deadline_after(clock_type::duration timeout) const {
  if (server_.stopping()) {
    timeout = std::min<clock_type::duration>(timeout, server_.config().stop_grace);
  }
  return clock_type::now() + timeout;
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
  // not start another, and the session ends.
  set_deadline(clock_type::time_point::max());
  // A write cut short, or bytes the kernel still holds for the client: reset, so the kernel
  // frees them now. A graceful close would keep them queued (up to the SO_SNDBUF cap) for as
  // long as the client keeps its connection open, outside every bound of ours.
  if (phase_ == phase::writing || unacknowledged > 0) return reset();
  beast::error_code ignored;
  socket_.cancel(ignored);
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
  beast::error_code ignored;
  socket_.set_option(net::socket_base::linger(true, 0), ignored);
  socket_.close(ignored);
}

void session::do_read() {
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
  exec_.start(
      [this, room](auto&& handler) {
        socket_.async_read_some(buffer_.prepare(room), std::forward<decltype(handler)>(handler));
      },
      beast::bind_front_handler(&session::on_read_head, shared_from_this()));
}

void session::on_read_head(beast::error_code ec, std::size_t bytes) {
  // End of stream, a reset, or the deadline (operation_aborted): like a failed header read,
  // the session ends without an answer; bytes of an unfinished head are not a request.
  if (ec) return;
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
    exec_.start(
        [this](auto&& handler) {
          net::async_write(socket_, net::buffer(kContinue.data(), kContinue.size()),
                           std::forward<decltype(handler)>(handler));
        },
        beast::bind_front_handler(&session::on_continue, shared_from_this()));
    return;
  }
  do_read_body();
}

void session::on_continue(beast::error_code ec, std::size_t /*bytes*/) {
  if (ec) return;  // the client is gone
  do_read_body();
}

void session::do_read_body() {
  // Read the rest of the message into the parser's string body. Bytes already in buffer_
  // (usually the whole body, sent with the header) are used first.
  exec_.start(
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

  // The stop has begun (after the drain delay) and this request arrived whole only now: it
  // was not in progress, so it is not started. 503 + Retry-After tells the client to retry
  // (elsewhere: the listener is closed), and the close after it lets the connection go;
  // no worker is touched. The requests in progress when the stop began finish as usual.
  if (server_.stopping()) {
    keep_alive_ = false;
    fill_overloaded(res_);
    return send_response();
  }

  if (is_heavy(route_)) {
    // Unfinished writes already park more than the budget: shed before spending the CPU and
    // the memory of another page. /ping and 404 are small and never shed.
    if (server_.budget().over()) {
      return on_heavy_refused(refuse_for(refusal_reason::write_budget));
    }
    // Hand the body over to the heavy route's placement: moved, never copied. Inline, the
    // route runs right here and on_heavy_done is called before start() returns; on a pool, a
    // worker runs it and on_heavy_done is called later from the event loop. This session
    // stays alive meanwhile because the completion holds a shared_ptr to it. A call the
    // placement will not start (admission control, a full pool) is answered at once.
    const std::optional<heavy_refusal> refused = server_.placement().start(
        route_, std::move(req.body()),
        [self = shared_from_this()](heavy_output&& out) { self->on_heavy_done(std::move(out)); });
    if (refused) on_heavy_refused(*refused);
    return;
  }

  // /ping, the operations endpoints and 404 are cheap: answer them here, on the session's
  // thread, without the pool.
  try {
    if (route_ == route::ping) {
      fill_copy(res_, http::status::ok, content_type::json,
                server_.ping_body(std::chrono::system_clock::now()));
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

void session::on_heavy_done(heavy_output&& out) noexcept {
  // Back on the host thread with the route's result. It must not throw: in pooled mode we
  // are inside the pool's completion delivery.
  try {
    if (out.status == http::status::internal_server_error && out.body == kFailedBody) {
      fill_error(res_, out.status);  // what Hono's default error handler answers
    } else if (static_cast<unsigned>(out.status) >= 500) {
      // A 504 is a call given up as stuck (pool_placement.cpp): its worker was replaced.
      if (out.status == http::status::gateway_timeout)
        server_.health().note_stuck(clock_type::now());
      // The server's own answer (a stuck task: 504; given up at the stop deadline: 503; a
      // worker process that crashed: 500, process_isolation.hpp), as text/plain like every
      // other refusal; a 503 says when to come back.
      fill(res_, out.status, content_type::text, std::move(out.body));
      res_.retry_after = out.status == http::status::service_unavailable;
    } else {
      // /ssr answers HTML; /jwt answers JSON, its 400 "Bad request" included (the reference
      // route sets the content type for both outcomes).
      fill(res_, out.status, route_ == route::ssr ? content_type::html : content_type::json_utf8,
           std::move(out.body));
      // The page exists now; it is written only if it fits in the write budget. A pool may
      // have admitted many calls before the first of their pages took the room: the ones
      // that do not fit get the shed 503, and the page is freed with the next response.
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
    beast::error_code ignored;
    socket_.close(ignored);
  }
}

void session::on_heavy_refused(const heavy_refusal& refusal) {
  // Refused rather than queued to answer late: 503 with Retry-After, so the client backs
  // off; or 500 when the call could not even be handed over. The connection stays open.
  server_.rejected().count(refusal.reason);
  if (refusal.status == http::status::service_unavailable) {
    server_.health().note_refusal(clock_type::now());  // /readyz: degraded for a while
    fill_overloaded(res_);
  } else {
    fill_error(res_, refusal.status);
  }
  send_response();
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

  // Keep the connection open only if the client wants that and the server is not stopping.
  const bool keep = keep_alive_ && !server_.stopping();
  serialize_head(head_, res_,
                 !keep     ? connection_header::close
                 : http10_ ? connection_header::keep_alive
                           : connection_header::none);

  // A client that does not read its response cannot hold the connection forever either.
  set_deadline(deadline_after(server_.config().idle_timeout));
  publish_buffered_bytes();
  // Counted until on_write: the strings stay allocated and the kernel queues up to its cap. A
  // heavy page has its reservation already (on_heavy_done); the rest are small.
  if (parked_.bytes() == 0) parked_ = server_.budget().reserve(head_.size() + res_.body.size());

  // Write the head and the body with one gathering write (one writev). HEAD: the same
  // head, Content-Length included, and no body.
  const std::array<net::const_buffer, 2> buffers{
      net::buffer(head_), head_only_ ? net::const_buffer() : net::buffer(res_.body)};
  exec_.start(
      [this, &buffers](auto&& handler) {
        net::async_write(socket_, buffers, std::forward<decltype(handler)>(handler));
      },
      beast::bind_front_handler(&session::on_write, shared_from_this(), !keep));
}

void session::on_write(bool close, beast::error_code ec, std::size_t /*bytes*/) {
  // The response is out (or the client is gone): one response, timed from the request.
  const auto took = clock_type::now() - request_read_at_;
  server_.metrics().record(route_, static_cast<unsigned>(res_.status),
                           static_cast<std::uint64_t>(
                               std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
  // Written, or given up: either way the strings are about to be freed or reused.
  parked_.release();
  // The client is gone, or it stopped reading until the deadline passed.
  if (ec) return;

  // The response said "Connection: close", or the server began stopping while we wrote.
  if (close || server_.stopping()) return do_close();

  // Keep-alive: read the next request (it may already be waiting in buffer_).
  release_large_buffers();
  publish_buffered_bytes();
  do_read();
}

void session::release_large_buffers() noexcept {
  // The response is out; a big body (a 781 KB page for a 64 KiB /ssr name) must not stay
  // allocated for as long as the client keeps the connection idle. Small buffers are kept:
  // reusing them is what makes the next /ping allocate nothing.
  if (res_.body.capacity() > kKeepBytes) std::string().swap(res_.body);
  if (head_.capacity() > kKeepBytes) std::string().swap(head_);
  // shrink_to_fit keeps the bytes of a pipelined request already received.
  if (buffer_.capacity() > kKeepBytes) buffer_.shrink_to_fit();
}

std::size_t session::buffered_bytes() const noexcept {
  return exec_.shared() ? published_bytes_.load(std::memory_order_relaxed) : measure_buffers();
}

void session::publish_buffered_bytes() noexcept {
  if (exec_.shared()) published_bytes_.store(measure_buffers(), std::memory_order_relaxed);
}

std::size_t session::measure_buffers() const noexcept {
  std::size_t bytes = buffer_.capacity() + res_.body.capacity() + head_.capacity();
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
  exec_.start(
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
