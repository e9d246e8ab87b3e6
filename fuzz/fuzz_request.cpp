// fuzz_request: the bytes one TCP connection delivers, through the real server code:
// Beast's request parser as session_read.cpp configures it, match_route, the routes, the
// response writer, keep-alive, 100-continue, refusals and lingering close.
//
// A knit_server::server runs in inline mode (every route on its event-loop thread, as
// KNIT_MODE=inline) on 127.0.0.1, port 0, on a thread of this process. Per input:
// connect, write the bytes, shutdown(SHUT_WR), read to EOF, then check what came back:
//   - every response is "HTTP/1.1 <status>" with a status in
//     {100,200,400,404,413,431,500,501,503};
//   - every final response has a Content-Length and exactly that many body bytes (none
//     for a HEAD request), and nothing follows a response that said "Connection: close";
//   - there are never more final responses than requests: at most one per request the
//     same parser configuration completes (after the empty lines the session skips), plus
//     one refusal (a parse error, a framing check, a limit, an unknown method, or an
//     HTTP/1.1 request without exactly one Host), which closes the connection;
//   - the server closes the connection within kDeadline (no hang) and never crashes.
// A broken invariant aborts, which libFuzzer records as a crash with its input.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "config.hpp"
#include "http/http_framing.hpp"
#include "loops/server.hpp"
#include "placement/heavy_placement.hpp"

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;

// A server that takes longer than this to close a connection whose client has sent its
// FIN is hung: every path (end of stream, refusal, linger) ends on the client's FIN.
constexpr std::chrono::seconds kDeadline{5};

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_request: invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

// The server, its configuration and its event loop, started once for the whole run.
struct server_fixture {
  knit_server::server_config cfg;
  net::io_context io{1};
  std::optional<knit_server::heavy_placement> placement;
  std::optional<knit_server::connection_limit> limit;
  std::optional<knit_server::write_budget> budget;
  std::optional<knit_server::server> srv;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  sockaddr_in address{};
  std::thread loop;

  server_fixture() {
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.mode = knit_server::exec_mode::inline_host;
    cfg.jwt_secret = "fuzz-secret-fuzz-secret-fuzz-sec";  // fixed: runs are reproducible
    cfg.ssr_cost_us = 0;
    cfg.jwt_cost_us = 0;
    placement.emplace(std::in_place_type<knit_server::inline_placement>, cfg);
    limit.emplace(cfg.max_connections);
    budget.emplace(std::size_t{1} << 30, std::size_t{128} * 1024);
    srv.emplace(io, cfg, *placement, *limit, *budget);
    const auto bound = srv->listen();
    srv->start();
    work.emplace(io.get_executor());
    address.sin_family = AF_INET;
    address.sin_port = htons(bound.port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // Like main.cpp: a handler that throws must not end the loop (and then hang every input).
    loop = std::thread([this] {
      for (;;) {
        try {
          io.run();
          return;
        } catch (const std::exception& e) {
          fail("a handler threw out of the event loop:", e.what());
        }
      }
    });
  }
};

server_fixture& fixture() {
  // Never destroyed: libFuzzer exits with the loop thread still running.
  static server_fixture* f = new server_fixture();
  return *f;
}

// What the server's parser configuration makes of the same bytes, request by request (at
// least as many requests as the server completes): the methods of the requests it
// completes, in order.
struct request_script {
  std::vector<http::verb> methods;
};

request_script parse_requests(std::string_view bytes) {
  request_script script;
  while (!bytes.empty()) {
    // The session skips a few empty lines before a request line (server/http/http_framing.hpp);
    // Beast alone would refuse them.
    for (std::size_t n = 0;
         n < knit_server::request_head_reader::kMaxEmptyLines && bytes.substr(0, 2) == "\r\n";
         ++n) {
      bytes.remove_prefix(2);
    }
    if (bytes.empty()) break;
    http::request_parser<http::string_body> parser;
    // Beast 1.81 enforces header_limit exactly only on a header presented in one piece;
    // one that arrives in reads passes up to about one read's worth over it (an 8,271-byte
    // header is refused whole and accepted in 512-byte reads; 16,300 bytes is refused
    // either way). So the server may complete a request with a header up to twice the
    // limit; allowing that here keeps this count an upper bound on the server's.
    parser.header_limit(static_cast<std::uint32_t>(2 * knit_server::server_config::kHeaderLimit));
    parser.body_limit(knit_server::server_config::kBodyLimit);
    // The header first (put() stops after it unless eager): the session checks Host
    // then, before a chunked body's trailer fields are merged into the same fields.
    boost::beast::error_code ec;
    std::size_t used = 0;
    while (!ec && !parser.is_header_done()) {
      const std::size_t n = parser.put(net::buffer(bytes.data() + used, bytes.size() - used), ec);
      used += n;
      if (n == 0) break;
    }
    // HTTP/1.1 needs exactly one Host (RFC 9112 3.2); the session refuses at the header.
    if (parser.is_header_done()) {
      const auto hosts = parser.get().count(http::field::host);
      if (!(hosts == 1 || (hosts == 0 && parser.get().version() < 11))) return script;  // refused
    }
    parser.eager(true);
    while (!ec && !parser.is_done()) {
      const std::size_t n = parser.put(net::buffer(bytes.data() + used, bytes.size() - used), ec);
      used += n;
      if (n == 0) break;
    }
    if (ec == http::error::need_more || (!ec && !parser.is_done())) return script;  // partial
    if (ec) return script;                                                          // refused
    script.methods.push_back(parser.get().method());
    bytes.remove_prefix(used);
    if (!parser.get().keep_alive()) return script;  // the server closes after it
  }
  return script;
}

std::string exchange(const std::uint8_t* data, std::size_t size) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket()");
  const auto& addr = fixture().address;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) fail("connect()");
  // The input (at most -max_len bytes) fits the socket buffers, so the write cannot wait
  // for us to read; a write error means the server closed early, which the checks judge.
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string received;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  char buf[16384];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) fail("server did not close the connection within the deadline");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;  // EOF, or reset after the server's linger limit
    received.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return received;
}

bool allowed_status(int s) {
  switch (s) {
    case 100:
    case 200:
    case 400:
    case 404:
    case 413:
    case 431:
    case 500:
    case 501:
    case 503: return true;
    default: return false;
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}

// Walks the responses in `out` and checks them against the requests in `script`.
void check_responses(std::string_view out, const request_script& script) {
  std::size_t finals = 0;
  bool closed = false;
  while (!out.empty()) {
    if (closed) fail("bytes after a Connection: close response");
    const std::size_t head_end = out.find("\r\n\r\n");
    if (head_end == std::string_view::npos)
      fail("response head not terminated", std::string(out.substr(0, 200)));
    std::string_view head = out.substr(0, head_end);
    out.remove_prefix(head_end + 4);
    if (head.size() < 12 || head.substr(0, 9) != "HTTP/1.1 ")
      fail("bad status line", std::string(head.substr(0, 80)));
    const int status = std::atoi(std::string(head.substr(9, 3)).c_str());
    if (!allowed_status(status)) fail("unexpected status", std::to_string(status));
    if (status == 100) continue;  // interim: no body, the final response follows
    std::optional<std::size_t> length;
    bool plain_text = false;
    std::size_t line = head.find("\r\n");
    while (line != std::string_view::npos) {
      head.remove_prefix(line + 2);
      line = head.find("\r\n");
      const std::string_view field = head.substr(0, line);
      const std::size_t colon = field.find(':');
      if (colon == std::string_view::npos) fail("header line without a colon", std::string(field));
      std::string_view value = field.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (iequals(field.substr(0, colon), "content-length")) {
        if (length) fail("two Content-Length fields");
        length = static_cast<std::size_t>(std::strtoull(std::string(value).c_str(), nullptr, 10));
      } else if (iequals(field.substr(0, colon), "connection") && iequals(value, "close")) {
        closed = true;
      } else if (iequals(field.substr(0, colon), "content-type")) {
        plain_text = value.substr(0, 10) == "text/plain";
      }
    }
    if (!length) fail("final response without Content-Length");
    // The response to request i; a refusal answers the request that failed to parse.
    // A refusal (the parser's 400, 413, 431, in plain text; /jwt's own 400 is JSON) always
    // carries its body, even to a HEAD request, and is the connection's last response.
    const bool refusal =
        status == 413 || status == 431 || status == 501 || (status == 400 && plain_text);
    if (refusal && !closed) fail("a refusal that keeps the connection open");
    const bool head_request =
        !refusal && finals < script.methods.size() && script.methods[finals] == http::verb::head;
    const std::size_t body = head_request ? 0 : *length;
    if (out.size() < body) fail("body shorter than its Content-Length");
    out.remove_prefix(body);
    if (!refusal) ++finals;
  }
  // A refusal may answer bytes that our looser parse still waits on (a header over the
  // server's limit), so only answers to requests are counted against requests.
  if (finals > script.methods.size())
    fail("more responses than requests",
         std::to_string(finals) + " > " + std::to_string(script.methods.size()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string received = exchange(data, size);
  if (std::getenv("FUZZ_REQUEST_ECHO"))
    std::fprintf(stderr, "--- received:\n%s\n---\n", received.c_str());
  check_responses(received,
                  parse_requests(std::string_view(reinterpret_cast<const char*>(data), size)));
  return 0;
}
