// One HTTP/1.1 connection: read a request, route it, run it (inline or pooled), write the
// response, repeat.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include <chrono>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/http_framing.hpp"
#include "http/request_arena.hpp"
#include "http/request_parser.hpp"
#include "http/responses.hpp"
#include "http/router.hpp"
#include "limits/write_budget.hpp"
#include "loops/connection_executor.hpp"
#include "loops/io_ring.hpp"
#include "loops/reactor_membership.hpp"
#include "placement/heavy_job.hpp"
#include "placement/heavy_outcome.hpp"

namespace knit_server {

class process_status;
class server;

// A TCP socket bound to the io_context's own executor type rather than the type-erased
// any_io_executor: every operation then skips the type erasure's copies and indirections.
using socket_type =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

// A session is a chain of completion handlers, as in Beast's examples:
//
//   do_read -> check_head <-> on_read_head   (until the raw head is in and passed)
//           -> on_read_header --(header only)-----------------------------> handle_request
//                 +--(body)--> [100 Continue: on_continue] -> do_read_body -> on_read --^
//
//   handle_request --(/ping, /livez, /readyz, /metrics, 404: at once)-----> send_response
//                  --(/ssr, /jwt: heavy_placement, inline or pool)-> respond -----^
//                  --(/ssr, /jwt while the write budget is exceeded)-> respond (503) ^
//
//   send_response -> on_write --(keep-alive)--> do_read  (the next request)
//                             --(Connection: close)--> do_close -> do_linger -> on_linger
//
// At the stop, a request in progress is answered and the connection closes; the requests
// already received behind it (pipelined) each get 503 + Retry-After first, in order, and the
// last response carries Connection: close (next_request_received).
//
// From send_response until on_write, the response's bytes (and the send queue they may fill)
// count against the server's write budget (write_budget.hpp); while it is exceeded, new
// /ssr and /jwt get the same 503 + Retry-After as an admission refusal, and /ping is never
// shed. A read or write that outlives its deadline ends the connection with a reset
// (SO_LINGER {1, 0}) whenever bytes are still unsent or unacknowledged: a graceful close
// would leave them to the kernel (expire()).
//
// A head that breaks RFC 9112's framing rules (check_head, http_framing.hpp) goes to refuse()
// (400, or 501 for a transfer coding other than chunked, then close) before the parser sees
// it. A request the parser rejects goes to refuse() (400, 413 or 431, then close): a header over
// 8 KiB or 128 fields, a body over 64 KiB, anything that needs more than the 16 KiB read
// buffer (an endless chunk line or trailer), a missing Host. Any other read or write error
// ends the chain, and with it the session. A heavy request gets the heavy_outcome its placement
// built (heavy_outcome.hpp: the page, or 503 + Retry-After for a refusal, with the connection
// kept open, 500, 504, ...), written as it is by respond().
//
// Exactly one request is in progress at a time, and responses always leave in request order.
// A pipelined request already whole in buffer_ behind a response is answered before that
// response is written when it is cheap: a GET or HEAD of /ping, the operations endpoints or a
// 404 (not /ssr or /jwt, which may wait for a worker; not a method that carries a body, which
// may come later or after a 100 Continue). The responses collect in batch_ (at most
// kBatchBytes) and leave together in one gathering write, with the same bytes as one by one.
// If reading the next request ends the connection instead (a GET whose body never comes),
// batch_ is still written (end_with_batch). The stop does not batch: each response is written
// as it comes, as described above.
//
// System calls: a response (with those held back in batch_) leaves in one synchronous
// gathering write_some (the socket is non-blocking; only what the kernel does not take goes to
// async_write), and on_write runs at once, with no completion posted to the loop. The next
// head read then starts at once (posted behind the loop's other handlers only when a
// pipelined request already waits in buffer_). That read is a drained_buffer
// (drained_read.hpp): when the last read emptied the socket, it waits for epoll instead of
// trying a recvfrom that would find nothing (EAGAIN). So one request on a keep-alive
// connection costs a recvfrom and a sendmsg, and a share of the loop's epoll_wait. The writes
// are counted (request_counters::writes, the knit-stats line).
// With the loop's io_uring (KNIT_IO, io_ring.hpp) the head read is a ring receive and the
// response's first write a ring sendmsg instead, submitted with the turn's other operations in
// one io_uring_enter; on_write then runs from the send's completion. In a quiet loop, a small
// keep-alive response with nothing received behind it goes with the next head's receive as
// one linked pair (io_ring::send_then_recv, links_sends()): the send's success posts no completion,
// so the loop's wait is not ended by it; the response is timed as it is handed over, and the
// rest of on_write runs when the receive ends (linked_read_done), which says the response is
// out. Until then the session cannot tell a response still going out from an idle connection:
// a stop cancels the receive only (a response on its way keeps its grace), a deadline judges
// by the bytes the kernel still holds, and a reset waits for the pair to end before it closes
// the descriptor (the receive takes it when it starts). The rest (body reads, the
// 100 Continue, the rest of a response, the lingering close) stays Asio's.
// Each pending operation's handler holds a shared_ptr to the session: the session lives
// exactly as long as something is in progress on it.
//
// Threads: exec_ (connection_executor.hpp) runs every handler of the chain, and the actions
// other threads ask for (stop(), check_deadline()), on the connection's thread: the thread
// of the event loop that accepted it (with KNIT_HOSTS>1 one of several, for the connection's
// whole life), or in KNIT_MODE=multi the connection's own strand. Only deadline_ and
// published_bytes_ are read from elsewhere, and they are atomics.
class session : public std::enable_shared_from_this<session> {
 public:
  // Takes ownership of an accepted socket.
  session(socket_type&& socket, server& srv);
  ~session();

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Registers with the server and starts the chain (reads the first request); if the
  // server is already stopping, closes the connection instead. Call once, right after
  // make_shared.
  void run();

  // The server is stopping. Closes the connection now if it is idle between requests;
  // otherwise the current request is answered, then each request already received behind it
  // gets 503 + Retry-After, the last response with Connection: close, and then it closes.
  // Multi mode and KNIT_HOSTS>1: may be called from any thread (under the server's lock); it
  // posts the work to the session's thread.
  void stop();

  // Called by the server's periodic sweep: if the current read or write has outlived its
  // deadline (KNIT_IDLE_TIMEOUT_MS), cancel it; the session then ends, with a reset when the
  // kernel still holds bytes for the client (expire()). Multi mode and
  // KNIT_HOSTS>1: may be called from any thread; an overdue session is checked again, and
  // cancelled, on its own thread (the deadline may have moved on meanwhile).
  void check_deadline(std::chrono::steady_clock::time_point now);

  // The bytes this connection holds in its buffers (capacities): the read buffer, the
  // request body, the response body and head. The knit-stats line sums them. Between
  // requests it is at most kReadChunk for the read buffer and kKeepBytes for each other
  // (release_large_buffers). The figure published (connection_executor::shared) when a read
  // starts waiting for the client, when a response is sent and once it is written: the
  // SIGUSR1 thread may not look at the buffers themselves.
  std::size_t buffered_bytes() const noexcept;

  // A response buffer whose capacity exceeds this is freed once its response has been
  // written (the read buffer: one exceeding kReadChunk), so an idle keep-alive connection
  // keeps only small buffers whatever its last request was.
  static constexpr std::size_t kKeepBytes = 4 * 1024;
  // The most bytes of pipelined responses held back to be written together.
  static constexpr std::size_t kBatchBytes = 16 * 1024;
  // The most one read of a request's head asks for (pipelined requests may come with it).
  static constexpr std::size_t kReadChunk = 8 * 1024;

 private:
  enum class phase : std::uint8_t {
    reading,   // waiting for (the rest of) a request
    handling,  // running the route, possibly on a pool worker
    writing,   // sending the response
    closing,   // sent our FIN; discarding input until the client closes
  };

  // now + timeout, but never more than a short grace period once the server is stopping.
  std::chrono::steady_clock::time_point deadline_after(
      std::chrono::steady_clock::duration timeout) const;
  void set_deadline(std::chrono::steady_clock::time_point at) noexcept {
    deadline_.store(at, std::memory_order_relaxed);
  }

  // stop() and check_deadline() on the session's own thread (its strand in multi mode).
  void stop_here();
  // Stopping: whether a next request (its whole head, or bytes the head check refuses) is
  // already received behind the current one. The first call also takes into buffer_ what the
  // kernel already holds for the socket (without waiting); later calls look at buffer_ only,
  // so a client that keeps sending cannot hold the connection open. Only while no read is
  // pending (between handle_request and the next do_read).
  bool next_request_received();
  void expire(std::chrono::steady_clock::time_point now);
  // Bytes the kernel still holds in this socket's send queue: unsent, or sent and not
  // acknowledged (SIOCOUTQ). 0 when the ioctl fails.
  std::size_t unacknowledged_bytes() noexcept;
  // Closes with SO_LINGER {1, 0}: an RST, and the kernel frees the send queue at once.
  void reset() noexcept;

  std::size_t measure_buffers() const noexcept;
  void publish_buffered_bytes() noexcept;

  void do_read();
  void start_request();
  void check_head();
  void on_read_head(boost::beast::error_code ec, std::size_t bytes);
  void on_read_header(boost::beast::error_code ec, std::size_t bytes);
  void on_continue(boost::beast::error_code ec, std::size_t bytes);
  void do_read_body();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  // A read failed and the session ends: writes the responses still in batch_ first.
  void end_with_batch();
  void handle_request();
  void answer_ops_endpoint(const process_status& status);
  void respond(heavy_outcome&& out) noexcept;
  void refuse(boost::beast::http::status status);
  // Bytes a read put in buffer_'s prepared room: committed, and the next request's latency
  // starts with a clock read of its own (read_since_response_).
  void commit_read(std::size_t bytes) noexcept;
  void send_response();
  // Whether the next request, whole in buffer_ already, is one answered on this thread at once
  // (its route is not heavy): then the current response waits in batch_ for it. `probe`, a
  // fresh reader, is left having judged buffer_'s bytes: start_request takes it over.
  bool next_request_is_cheap(request_head_reader& probe) const;
  // What write_response writes: the responses held back (batch_), this one's head and its
  // body (none for HEAD).
  using response_pieces = std::array<boost::asio::const_buffer, 3>;
  response_pieces pieces() const noexcept;
  void write_response(bool close);
  // What write_response's first write left (`sent` bytes of it are out): async_write.
  void write_rest(bool close, std::size_t sent);
  // KNIT_IO=uring: the ring's completions of the head read and the response write.
  static void ring_read_done(std::shared_ptr<void> owner, int result);
  static void ring_write_done(std::shared_ptr<void> owner, int result);
  // The receive of a response's pair ended (`result`: bytes or -errno): the response is out.
  void linked_read_done(int result);
  // Cancels the ring's pending read or write (as socket_.cancel() cancels Asio's).
  void cancel_ring_ops() noexcept;
  // Starts an Asio operation on socket_ (exec_.start), first putting the socket back in
  // Asio's epoll set if the ring took it out (reactor_membership.hpp). Where that fails the
  // socket is closed first: the operation then ends at once with an error, and so does the
  // connection.
  template <class Initiate, class Handler>
  void start_asio(Initiate&& initiate, Handler&& handler) {
    if (!in_reactor_) {
      in_reactor_ = true;
      if (rejoin_reactor(socket_)) {
        cancel_ring_ops();
        boost::beast::error_code ignored;
        socket_.close(ignored);
      }
    }
    exec_.start(std::forward<Initiate>(initiate), std::forward<Handler>(handler));
  }
  void record_response() noexcept;
  void on_write(bool close, boost::beast::error_code ec, std::size_t bytes);
  // on_write after the response's timing: its buffers go, then the close or the next read.
  void after_write(bool close, boost::beast::error_code ec);
  void release_large_buffers() noexcept;
  // The read buffer's part of it, for a receive linked to its response's send (whose
  // buffers are still in use): down to one read's chunk.
  void release_large_read_buffer() noexcept;
  void do_close();
  void do_linger();
  void on_linger(boost::beast::error_code ec, std::size_t bytes);

  // The request parser: string body (moved out to the heavy route), header fields in arena_,
  // at most server_config::kFieldLimit of them.
  using parser_type = request_parser;

  socket_type socket_;
  // KNIT_IO=uring: the loop's ring (server::ring(), io_ring.hpp), which takes the head reads
  // and the response writes; null with epoll. The rest (body reads, the 100 Continue, the
  // rest of a response the kernel did not take at once, the lingering close) stays Asio's.
  io_ring* ring_;
  ring_op ring_read_{&session::ring_read_done};
  ring_op ring_write_{&session::ring_write_done};
  // The ring's sendmsg: the message and its three pieces (batch_, head_, res_.body), kept
  // until its completion; the bytes it carries, and whether the connection closes after.
  msghdr ring_msg_{};
  std::array<iovec, 3> ring_iov_{};
  std::size_t ring_total_ = 0;
  bool ring_close_ = false;
  // The response's send and the next head's receive are pending as one pair
  // (io_ring::send_then_recv), and the reset() asked meanwhile, done when the pair ends.
  bool ring_linked_ = false;
  bool reset_after_pair_ = false;
  // Whether socket_ is in Asio's epoll set (as Asio put it at the accept). The ring takes a
  // keep-alive connection out after its first response (one epoll_ctl per connection, none
  // for a connection that closes after one request), start_asio puts it back.
  bool in_reactor_ = true;
  // Where every handler of this connection runs, one at a time.
  connection_executor exec_;
  // The read buffer, reused for every request on the connection, never larger than
  // kReadBufferLimit: a request that would need more is refused (on_read).
  boost::beast::flat_buffer buffer_{server_config::kReadBufferLimit};
  request_arena arena_;  // the current request's header fields; before parser_
  // The current request's head, checked for RFC 9112 framing on its raw bytes before the
  // parser sees them (http_framing.hpp).
  request_head_reader head_reader_{server_config::kHeaderLimit};
  // head_reader_ has judged the next request's bytes already (send_response's batch, through
  // next_request_is_cheap): start_request goes on from there instead of reading the head
  // again from its first byte. buffer_ is not consumed in between, so the bytes it judged
  // are still the start of buffer_.
  bool head_judged_ = false;
  // The current request's parser. Parsers are single-use; emplace() reuses the storage.
  std::optional<parser_type> parser_;
  response res_;      // the current response, reused
  std::string head_;  // its serialized status line and headers, reused
  // Responses to pipelined requests answered and not yet written, in order (send_response):
  // they leave with the current one. Empty between writes.
  std::string batch_;
  // batch_'s bytes in the server's write budget, until the write that sends them completes.
  write_budget::reservation batch_parked_;
  server& server_;
  // When the pending read or write gives up. max() while a route runs: waiting for a pool
  // worker is the server's time, not the client's. Written on the session's thread (relaxed
  // stores: a plain store on x86); partner: the relaxed load in check_deadline(), which in
  // multi mode runs on the sweep's thread (with KNIT_HOSTS>1 on the control thread, at the
  // stop deadline) and only decides whether to post expire(), which reads it again on the
  // session's thread.
  std::atomic<std::chrono::steady_clock::time_point> deadline_{
      std::chrono::steady_clock::time_point::max()};
  // Multi mode and KNIT_HOSTS>1: measure_buffers() as of the last publish_buffered_bytes(),
  // stored relaxed on the session's thread; partner: the relaxed load in buffered_bytes(),
  // on the SIGUSR1 thread.
  std::atomic<std::size_t> published_bytes_{0};
  // The current response's bytes in the server's write budget, from send_response to
  // on_write (or the session's end); empty otherwise.
  write_budget::reservation parked_;
  // Closing: until when a client that has not yet acknowledged the whole response is given
  // time before the reset (the idle timeout from do_close); the 2 s linger wait applies only
  // to a client that has.
  std::chrono::steady_clock::time_point closing_until_{};
  phase phase_ = phase::reading;
  // When the current request was read whole (handle_request, refuse): its latency's start.
  std::chrono::steady_clock::time_point request_read_at_{};
  // When the last response was timed (record_response), and whether bytes have been read
  // since: a request whose bytes were all here then (pipelined) starts its latency there,
  // with no clock read of its own (handle_request).
  std::chrono::steady_clock::time_point last_response_at_{};
  bool read_since_response_ = true;
  route route_ = route::not_found;  // the current request's route
  bool keep_alive_ = false;         // the client asked to keep the connection
  bool http10_ = false;             // HTTP/1.0 client: keep-alive must be confirmed
  bool head_only_ = false;          // HEAD request: send the headers only
  bool took_received_ = false;      // stopping: the kernel's received bytes are in buffer_
  // do_read() is running its loop: a do_read() reached again from inside it (a pipelined
  // request answered, a write completed at once) only asks the loop for one more turn, so
  // the stack does not grow with the requests already in buffer_.
  bool in_read_loop_ = false;
  bool read_again_ = false;
  // write_response wrote the whole response at once and calls on_write itself.
  bool wrote_at_once_ = false;
  std::size_t lingered_ = 0;  // bytes discarded while closing
};

}  // namespace knit_server
