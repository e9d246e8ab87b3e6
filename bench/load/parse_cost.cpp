// parse_cost: ns per response of knit-load's response_parser alone, in-process (no sockets):
// each typical response fed whole, then in two reads split inside the head; thread CPU
// time per response.
// Not part of the build: compiled against one response_parser source at a time,
//   g++ -std=c++20 -O2 -DNDEBUG -I DIR bench/load/parse_cost.cpp DIR/response_parser.cpp \
//       -o parse_cost
// (DIR: bench/load, or a directory holding another version of response_parser.{hpp,cpp}).
#include <time.h>

#include <cstdio>
#include <string>

#include "response_parser.hpp"

// This thread's CPU time, so that time the machine gives to others is not counted.
double cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main() {
  using knit_load::response_parser;
  const std::string nginx =
      "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 20:30:00 GMT\r\n"
      "Content-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok";
  const std::string chunked =
      "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
      "400\r\n" +
      std::string(1024, 'x') + "\r\n0\r\n\r\n";
  const int n = 2'000'000;
  response_parser p;
  for (const auto& [name, resp] : {std::pair{"nginx 2-byte", nginx}, {"chunked 1 KiB", chunked}}) {
    for (const std::size_t split : {std::size_t{0}, std::size_t{20}}) {
      std::uint64_t sink = 0;
      const double t0 = cpu_ns();
      for (int i = 0; i < n; ++i) {
        p.reset();
        std::size_t consumed = 0;
        if (split) p.feed(resp.data(), split, consumed);
        if (p.feed(resp.data() + split, resp.size() - split, consumed) !=
            response_parser::feed_result::kComplete)
          return 1;
        sink += p.body_bytes() + static_cast<std::uint64_t>(p.status());
      }
      const double ns = (cpu_ns() - t0) / n;
      std::printf("%-14s %-9s %7.1f ns/response (sink %llu)\n", name, split ? "2 reads" : "1 read",
                  ns, static_cast<unsigned long long>(sink % 10));
    }
  }
}
