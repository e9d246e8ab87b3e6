// Per-route request counters and the one-line `knit-stats {json}` report printed on SIGUSR1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config.hpp"
#include "router.hpp"

namespace knit_server {

// Requests answered, by route. Only the host thread touches them, so they are plain
// integers: counting costs /ping nothing but an increment.
struct request_counters {
  std::uint64_t ping = 0;
  std::uint64_t ssr = 0;   // includes /ssr answered 503 (pool full) or 500
  std::uint64_t jwt = 0;   // includes /jwt answered 400, 503 or 500
  std::uint64_t other = 0; // 404s, plus requests refused before routing (400, 413, 431)

  void count(route r) noexcept {
    switch (r) {
      case route::ping: ++ping; break;
      case route::ssr: ++ssr; break;
      case route::jwt: ++jwt; break;
      case route::not_found: ++other; break;
    }
  }
};

// The whole line, without the newline:
//   knit-stats {"mode":"pooled","requests":{"ping":N,"ssr":N,"jwt":N,"other":N},"pool":{...}}
// `pool_json` is knit::to_json(pool.stats()), or nullopt in inline mode ("pool":null).
// The benchmark driver parses this line: change it only together with the driver.
std::string format_stats_line(exec_mode mode, const request_counters& counters,
                              std::optional<std::string_view> pool_json);

}  // namespace knit_server
