// Admission control for the heavy routes: accept a call, or answer 503 at once because it would wait too long.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace knit_server {

// What the pool looks like to a call about to be submitted.
struct queue_state {
  std::size_t ahead = 0;  // calls accepted and not yet completed (knit::pool::pending())
  std::size_t threads = 1;  // the pool's workers
  std::chrono::nanoseconds call_time{0};  // expected run time of one call (0 = not known yet)
};

// The settings (server_config::max_queue_delay and max_queued).
struct admission_policy {
  // A call whose expected wait exceeds this is refused; 0 = no delay rule.
  std::chrono::milliseconds max_queue_delay{250};
  // A call that would find this many calls ahead of it is refused, whatever the estimate
  // says: the backstop while the estimate is still 0 (no call has come back yet) or wrong.
  // 0 = no count rule.
  std::size_t max_queued = 4096;
};

enum class admission {
  accept,
  reject_delay,  // expected wait over max_queue_delay
  reject_count,  // max_queued calls already ahead
};

// The time a new call is expected to wait before a worker starts it:
// ahead / threads x call_time. With `ahead` including the calls now running this is an
// upper estimate, which is the safe side for admission.
std::chrono::nanoseconds expected_wait(const queue_state& q) noexcept;

// The decision, a pure function of its arguments so it can be tested without a pool.
admission decide_admission(const queue_state& q, const admission_policy& policy) noexcept;

}  // namespace knit_server
