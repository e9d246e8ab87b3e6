// process_channel: one worker thread's link to its own child process (the "proxy" design of
// docs/process-workers.md). call() sends one request (into the child's lanes in
// turn) and waits for the answer or the death
// of the child, whichever comes first (poll on the answer eventfd and the pidfd); a death or
// a broken protocol fails that call alone, the child is reaped, and the starter starts a
// replacement at once, after a backoff when the worker is in a crash loop (starter.hpp,
// crash_loop.hpp). Owned by its thread (thread_local in process_api.cpp): never shared, so
// no lock; what it shares with the starter is in its worker_box.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "knit/process.hpp"
#include "process/spawn.hpp"
#include "process/starter.hpp"

namespace knit::detail {

class process_channel {
 public:
  // `box`: the worker this thread serves its calls on (claim_worker(), standby.hpp).
  explicit process_channel(std::shared_ptr<worker_box> box);
  ~process_channel();
  process_channel(const process_channel&) = delete;
  process_channel& operator=(const process_channel&) = delete;

  // Runs task `index` (named `name`, for messages) on the child. Past a limit in `limits`
  // the child is killed and reaped, and the call fails with timed_out or stuck. Throws
  // process_error.
  std::string call(std::uint32_t index, std::string_view name, std::string_view bytes,
                   const process_call_limits& limits);

 private:
  // Takes `box` as this thread's worker (its options, number and spin).
  void attach(std::shared_ptr<worker_box> box);
  void ensure_child(std::string_view name);
  void reap_if_died_between_calls();
  // Kills (when `kill`) and reaps the child; returns how it ended, in words.
  std::string end_child(bool kill);
  // Counts the crash (its replacement is under way) and makes its error (the message gains
  // the crash-loop state).
  process_error crashed(std::uint64_t id, child_end& end, std::string message);
  // A call refused because its deadline passed before it could be sent.
  static process_error past_deadline(std::string_view name, std::string_view when);
  // Kills and reaps the child of a call past its deadline (or its stuck limit, `stuck`).
  process_error killed_past_limit(std::string_view name, bool stuck);
  std::string who(std::string_view name) const;

  // Null after a stuck call gave the worker back (killed_past_limit): the next call claims
  // one, most likely that same worker with its replacement child started.
  std::shared_ptr<worker_box> box_;
  unsigned number_ = 0;
  const process_options* options_ = nullptr;  // box_'s
  std::chrono::nanoseconds spin_{0};          // 0 when this thread may run on one CPU only
  bool degraded_ = false;                     // as box_ said after the last crash
  std::optional<child_process> child_;
  std::uint64_t seq_ = 0;  // the last request sent (over every child of this worker)
  // One call at a time, in the lanes in turn as the child serves them (shared_region.hpp):
  // the lane of the next call, and each lane's answer_seq as last taken (0: a new child).
  unsigned next_lane_ = 0;
  std::array<std::uint64_t, region_max_lanes> lane_answered_{};
};

}  // namespace knit::detail
