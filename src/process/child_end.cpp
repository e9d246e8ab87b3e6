// The end of one child process (child_end.hpp): its reap, how it ended, its crash counted
// once; and message_of, the words of a process_error without the code's message.
#include "process/child_end.hpp"

#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "process/counters.hpp"
#include "process/exit_status.hpp"
#include "process/pidfd.hpp"
#include "process/starter.hpp"

namespace knit::detail {

std::string message_of(const process_error& e) {
  std::string what = e.what();
  const std::string suffix = ": " + e.code().message();
  if (what.ends_with(suffix)) what.resize(what.size() - suffix.size());
  return what;
}

std::string reap(child_end& end, int pidfd) {
  std::lock_guard lock(end.mutex);
  if (end.reaped) return end.how;
  siginfo_t info{};
  int r;
  do {
    r = ::waitid(p_pidfd, static_cast<id_t>(pidfd), &info, WEXITED);
  } while (r < 0 && errno == EINTR);
  end.how = r == 0 ? describe_exit(info)
                   : std::string("ended (its status was not available: ") + std::strerror(errno) +
                         "; reaped elsewhere?)";
  end.exit = r == 0 ? exit_of(info) : child_exit{};
  end.reaped = true;
  if (end.live_counted) counters().children_live.fetch_sub(1, std::memory_order_relaxed);
  end.live_counted = false;
  return end.how;
}

child_exit how_it_ended(child_end& end) {
  std::lock_guard lock(end.mutex);
  return end.exit;
}

void count_crash_once(child_end& end) {
  if (!end.crash_counted.exchange(true)) {
    counters().crashes.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace knit::detail
