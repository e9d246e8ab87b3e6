// loop_slice (knit/loop_slice.hpp): sched_setattr with a custom slice, verified with
// sched_getattr, and the process-wide counts of what it did.
#include "knit/loop_slice.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace knit {
namespace {

// struct sched_attr (include/uapi/linux/sched/types.h), SCHED_ATTR_SIZE_VER1: declared here
// because glibc before 2.41 has neither the struct nor the wrappers.
struct sched_attr_v1 {
  std::uint32_t size;
  std::uint32_t sched_policy;
  std::uint64_t sched_flags;
  std::int32_t sched_nice;
  std::uint32_t sched_priority;
  std::uint64_t sched_runtime;  // SCHED_OTHER/BATCH on 6.12+: the custom slice, in ns
  std::uint64_t sched_deadline;
  std::uint64_t sched_period;
  std::uint32_t sched_util_min;
  std::uint32_t sched_util_max;
};

std::atomic<std::uint64_t> applied{0};
std::atomic<std::uint64_t> refused{0};
std::atomic<int> first_error{0};
std::atomic<std::int64_t> last_slice_us{0};

int refuse(int error) noexcept {
  refused.fetch_add(1, std::memory_order_relaxed);
  int none = 0;
  first_error.compare_exchange_strong(none, error, std::memory_order_relaxed);
  return error;
}

bool get_attr(sched_attr_v1& attr) noexcept {
  attr = {};
  return ::syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) == 0;
}

}  // namespace

int request_loop_slice(std::chrono::microseconds slice) noexcept {
  last_slice_us.store(slice.count(), std::memory_order_relaxed);
  sched_attr_v1 attr{};
  if (!get_attr(attr)) return refuse(errno);
  // Only the fair classes take a custom slice; a real-time or deadline thread is left alone.
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return refuse(EINVAL);
  // The policy and nice are passed back as they are: sched_setattr sets both (a lower nice
  // would need a privilege), and SCHED_FLAG_KEEP_PARAMS would skip the slice too.
  const std::uint64_t wanted =
      static_cast<std::uint64_t>(std::max<std::int64_t>(slice.count(), 0)) * 1000;
  attr.size = sizeof attr;
  attr.sched_flags = 0;
  attr.sched_runtime = wanted;
  attr.sched_deadline = 0;
  attr.sched_period = 0;
  if (::syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return refuse(errno);
  // Before 6.12 the call succeeds and the runtime is ignored: say so rather than count it.
  const std::uint64_t kept = std::clamp<std::uint64_t>(wanted, 100'000, 100'000'000);
  sched_attr_v1 now{};
  if (!get_attr(now)) return refuse(errno);
  if (now.sched_runtime != kept) return refuse(ENOTSUP);
  applied.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

namespace detail {

// A thread inherits its creator's custom slice (clone copies it): a worker started from a
// loop thread that asked for a short slice (a replacement or lent worker) would get an
// early virtual deadline too and preempt the loop it should yield to. sched_runtime 0 puts
// the default slice back; policy and nice are passed back as they are.
int drop_inherited_loop_slice() noexcept {
  if (applied.load(std::memory_order_relaxed) == 0) return 0;  // none asked for in this process
  sched_attr_v1 attr{};
  if (!get_attr(attr)) return errno;
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return 0;
  attr.size = sizeof attr;
  attr.sched_flags = 0;
  attr.sched_runtime = 0;
  attr.sched_deadline = 0;
  attr.sched_period = 0;
  return ::syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : errno;
}

}  // namespace detail

std::chrono::microseconds current_loop_slice() noexcept {
  sched_attr_v1 attr{};
  if (!get_attr(attr)) return std::chrono::microseconds(0);
  return std::chrono::microseconds(attr.sched_runtime / 1000);
}

loop_slice_status loop_slice_now() noexcept {
  loop_slice_status s;
  s.applied = applied.load(std::memory_order_relaxed);
  s.refused = refused.load(std::memory_order_relaxed);
  s.first_error = first_error.load(std::memory_order_relaxed);
  s.slice = std::chrono::microseconds(last_slice_us.load(std::memory_order_relaxed));
  return s;
}

}  // namespace knit
