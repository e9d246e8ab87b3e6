// The /ping body cache: one shared by the host thread, or one per io thread in multi mode.
#include "http/ping_cache.hpp"

#include "routes/routes.hpp"

namespace knit_server {

namespace {

struct cached_body {
  std::chrono::sys_time<std::chrono::milliseconds> ms{};
  std::string body;
};
thread_local cached_body t_cache;  // multi mode: this thread's

const std::string& render_if_stale(std::chrono::sys_time<std::chrono::milliseconds>& cached_ms,
                                   std::string& body, std::chrono::system_clock::time_point now) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(now);
  if (ms != cached_ms || body.empty()) {
    body = routes::ping_body("knit", now);
    cached_ms = ms;
  }
  return body;
}

}  // namespace

const std::string& ping_cache::body(std::chrono::system_clock::time_point now) {
  if (per_thread_) return render_if_stale(t_cache.ms, t_cache.body, now);
  return render_if_stale(ms_, body_, now);
}

}  // namespace knit_server
