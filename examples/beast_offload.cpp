// Offloading one route of a Boost.Beast HTTP server to knit.
//
// GET /fib/<n> is CPU-heavy, so it runs on a knit worker through co_await async_run; the
// event loop stays free for every other connection meanwhile. To terminate on its own (it
// runs in CI), the program sends itself one request over loopback, prints the answer and
// exits: 0 if the answer is right.
#include <knit/asio.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

namespace {

std::uint64_t fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

// The server side: one connection, one request.
asio::awaitable<void> serve_one(tcp::acceptor& acceptor, knit::asio_host& host) {
  tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
  boost::beast::flat_buffer buffer;
  http::request<http::string_body> request;
  co_await http::async_read(socket, buffer, request, asio::use_awaitable);

  http::response<http::string_body> response{http::status::ok, request.version()};
  const std::string_view target = request.target();
  unsigned n = 0;
  if (target.starts_with("/fib/") &&
      std::from_chars(target.data() + 5, target.data() + target.size(), n).ec == std::errc{} &&
      n <= 40) {
    // The heavy route: on a worker. Errors (queue_full under load, a deadline) are values.
    auto [ec, value] = co_await knit::async_run(
        host, [](unsigned k) { return fib(k); }, n, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      response.result(http::status::service_unavailable);
      response.body() = ec.message();
    } else {
      response.body() = std::to_string(value);
    }
  } else {
    response.result(http::status::not_found);  // the light routes would run inline here
  }
  response.prepare_payload();
  co_await http::async_write(socket, response, asio::use_awaitable);
}

// The client side: what a user's browser would do.
asio::awaitable<std::string> ask(tcp::endpoint server, std::string target) {
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, asio::use_awaitable);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "127.0.0.1");
  co_await http::async_write(socket, request, asio::use_awaitable);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  co_await http::async_read(socket, buffer, response, asio::use_awaitable);
  co_return response.body();
}

void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

}  // namespace

int main() {
  asio::io_context io;
  knit::pool pool;                 // one worker thread
  knit::asio_host host(io, pool);  // its completions arrive on io

  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  asio::co_spawn(io, serve_one(acceptor, host), rethrow);
  std::string answer;
  asio::co_spawn(io, ask(acceptor.local_endpoint(), "/fib/30"),
                 [&answer](std::exception_ptr e, std::string body) {
                   rethrow(e);
                   answer = std::move(body);
                 });
  io.run();
  std::printf("GET /fib/30 -> %s\n", answer.c_str());
  return answer == "832040" ? 0 : 1;
}
