// knit::errc: every way a call can fail without a value, as a std::error_code category.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace knit {

enum class errc {
  queue_full = 1,  // max_pending calls are already waiting; the call was not accepted
  timed_out,       // the call's deadline passed (queue wait counted); a late result is discarded
  cancelled,       // cancel() or shutdown(cancel) removed the call before it ran, or
                   // shutdown's deadline passed (not started: never runs; running: result discarded)
  shut_down,       // the pool is shutting down or shut down; the call was not accepted
  task_failed,     // the task threw; the exception travels in the result
  stuck,           // the call ran past stuck_after (its deadline had not passed: that is
                   // timed_out); its worker was retired and replaced, a late result is discarded
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

// Thrown by pool_options::from_env / validate for bad configuration; what() names the
// setting and the offending value.
class config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace knit

template <>
struct std::is_error_code_enum<knit::errc> : std::true_type {};
