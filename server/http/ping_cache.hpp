// GET /ping's body, rendered once per millisecond and reused by every other /ping within it.
#pragma once

#include <chrono>
#include <string>

namespace knit_server {

// routes::ping_body("knit", now). The body changes only when its millisecond timestamp
// does, so under load most /ping requests get the same bytes without the four allocations
// and the date formatting of a fresh render. With one io thread there is one cache; with
// several (multi mode) each thread has its own, valid until that thread's next call, so no
// thread waits for another's render.
class ping_cache {
 public:
  // `per_thread`: more than one thread calls body() (multi mode).
  explicit ping_cache(bool per_thread) noexcept : per_thread_(per_thread) {}

  // The body at `now`. The reference stays valid until the calling thread's next call.
  const std::string& body(std::chrono::system_clock::time_point now);

 private:
  bool per_thread_;
  std::chrono::sys_time<std::chrono::milliseconds> ms_{};  // timestamp of body_
  std::string body_;                                       // empty until the first /ping
};

}  // namespace knit_server
