// worker_sched: applying pool_options::worker_sched and worker_nice to the calling thread.
#include "worker_sched.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "heavy_share.hpp"

namespace knit::detail {
namespace {

const char* sched_name(sched_class c) noexcept {
  switch (c) {
    case sched_class::other: return "other";
    case sched_class::batch: return "batch";
    case sched_class::idle: return "idle";
  }
  return "?";
}

}  // namespace

bool worker_sched_requested(const pool_options& options) noexcept {
  return options.worker_nice != 0 || options.worker_sched != sched_class::other ||
         nice_for_share(options.heavy_share) != 0;
}

worker_sched_error apply_worker_sched(const pool_options& options) noexcept {
  if (options.worker_sched != sched_class::other) {
    const int policy = options.worker_sched == sched_class::batch ? SCHED_BATCH : SCHED_IDLE;
    sched_param param{};  // both classes take priority 0
    if (::sched_setscheduler(0, policy, &param) != 0) return {errno, "worker_sched"};
  }
  // An explicit worker_nice is absolute; heavy_share's step goes on top of the nice the
  // thread inherited from the host, so the loop-to-worker weight ratio is the one chosen
  // whatever nice the program runs at.
  const int inherited = current_thread_nice();
  const int nice = worker_nice_for(options, inherited);
  if (nice != inherited || options.worker_nice != 0) {
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice) != 0) {
      return {errno, options.worker_nice != 0 ? "worker_nice" : "heavy_share"};
    }
  }
  return {};
}

void worker_sched_error::format(char* out, std::size_t size, const pool_options& options,
                                unsigned worker) const noexcept {
  const bool nice = setting && std::strcmp(setting, "worker_nice") == 0;
  const bool share = setting && std::strcmp(setting, "heavy_share") == 0;
  char value[48];
  if (nice) {
    std::snprintf(value, sizeof value, "%d", options.worker_nice);
  } else if (share) {
    std::snprintf(value, sizeof value, "%u (nice +%d)", options.heavy_share,
                  nice_for_share(options.heavy_share));
  } else {
    std::snprintf(value, sizeof value, "%s", sched_name(options.worker_sched));
  }
  char reason[128];
  const char* text = ::strerror_r(error, reason, sizeof reason);  // GNU: returns the text
  std::snprintf(out, size, "worker %u could not apply %s=%s (%s): %s%s", worker,
                setting ? setting : "?", value,
                nice    ? "KNIT_WORKER_NICE"
                : share ? "KNIT_HEAVY_SHARE"
                        : "KNIT_WORKER_SCHED",
                text,
                error == EPERM || error == EACCES
                    ? " (a nice below the thread's current one, or leaving SCHED_IDLE, needs "
                      "CAP_SYS_NICE or RLIMIT_NICE)"
                    : "");
}

}  // namespace knit::detail
