// heavy_share (heavy_share.hpp): the worker processes' nice, applied from the parent.
#include "heavy_share.hpp"

#include <cerrno>

#include <sys/resource.h>
#include <unistd.h>

namespace knit::detail {

int current_thread_nice() noexcept {
  errno = 0;
  const int n = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  return errno == 0 ? n : 0;
}

process_options process_options_of(const pool_options& options) {
  process_options out = options.process;
  if (out.nice == 0) {
    const int inherited = current_thread_nice();
    const int n = worker_nice_for(options, inherited);
    if (n != inherited) out.nice = n;
  }
  return out;
}

int apply_child_nice(int pid, int nice) noexcept {
  if (nice == 0) return 0;
  // PRIO_PROCESS on a pid is that thread alone (the child's main thread, before it starts any
  // other, which would inherit it). Same user, a higher nice: no privilege needed.
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), nice) != 0) return errno;
  return 0;
}

}  // namespace knit::detail
