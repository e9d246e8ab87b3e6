// The session's read -> route -> write chain, narrated step by step in the manner of Beast's
// examples: here the connection's start and a request's routing to its answer; the reading
// in session_read.cpp, the writing in session_write.cpp, and how it stops, expires and
// closes in session_upkeep.cpp.
#include "loops/session.hpp"

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)
#include "loops/process_status.hpp"
#include "loops/server.hpp"
#include "loops/wall_clock.hpp"

namespace knit_server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

// What a heavy page's reservation allows for its status line and headers (about 90 bytes:
// status, Content-Type, Content-Length, Connection), before the head is serialized.
constexpr std::size_t kHeadBytes = 256;

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
  // The latency metric's start. A request that was whole in buffer_ when the last response
  // was timed (pipelined) has waited since then: that reading is its start, and the clock is
  // read once a pipelined request instead of twice (41 ns a read here).
  request_read_at_ = read_since_response_ ? clock_type::now() : last_response_at_;
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
                server_.ping_body(wall_time_at(request_read_at_)));
    } else if (route_ == route::plaintext) {
      fill_plaintext(res_, wall_time_at(request_read_at_));
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
  request_head_reader probe(server_config::kHeaderLimit);
  if (keep && !server_.stopping() && batch_.size() + head_.size() + body_bytes <= kBatchBytes &&
      next_request_is_cheap(probe)) {
    head_reader_ = probe;  // the next head, judged: check_head goes on from its verdict
    head_judged_ = true;
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

bool session::next_request_is_cheap(request_head_reader& probe) const {
  // The whole head of the next request must be here (the head check's verdict on the raw
  // bytes, as check_head will judge them); its request line then says its route. A head
  // that check_head will refuse is answered at once too (refuse, then the close).
  std::string_view rest(static_cast<const char*>(buffer_.data().data()), buffer_.size());
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

}  // namespace knit_server
