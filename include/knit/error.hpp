// knit::errc: every way a call can fail without a value, as a std::error_code category.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

#include "knit/export.hpp"

namespace knit {

/// @brief Every way a call can fail without a value. A std::error_code enum: compare a
/// result's error() with `knit::errc::...` directly. Zero is not used (success).
///
/// The numbers are part of the interface: an error code's value() is the enumerator's
/// number, the same in every run and every build (a log that prints "knit:2" means
/// timed_out). A new value is appended, none is renumbered.
enum class errc {
  queue_full = 1,  ///< max_pending calls are already waiting; the call was not accepted.
  timed_out,       ///< The call's deadline passed (queue wait counted); a late result is discarded.
  cancelled,       ///< cancel() or shutdown(cancel) removed the call before it ran, or shutdown's
                   ///< deadline passed (not started: never runs; running: result discarded).
  shut_down,       ///< The pool is shutting down or shut down; the call was not accepted.
  task_failed,     ///< The task threw; the exception travels in the result.
  stuck,           ///< The call ran past stuck_after (its deadline had not passed: that is
                   ///< timed_out); its worker was retired and replaced, a late result is discarded.
  worker_crashed,  ///< A process task's child died (signal or exit) or broke the shared-memory
                   ///< protocol during the call; the result's knit::process_error names the
                   ///< task, the pid and the signal or exit code (knit/process.hpp).
  payload_too_large,    ///< A process task's request or answer is over process_options::
                        ///< arena_bytes; nothing was sent (request) or the answer was dropped.
  worker_start_failed,  ///< A process worker could not be started: spawn failed, the child died
                        ///< or timed out before its handshake, or its task registry differs.
  sandbox_violation,    ///< A process task made a system call its worker's sandbox refuses
                        ///< (process_options::sandbox); the message names the call, the worker
                        ///< was replaced.
  memory_limit,         ///< A process task allocated past its worker's memory limit
                        ///< (process_options::memory_limit); the worker was replaced.
  wrong_thread,         ///< knit::async_run was called off the thread that built its
                        ///< asio_host (a programming error); the call was not accepted.
};

/// The std::error_category of knit::errc: name() is "knit", message() describes each value
/// (and names an unknown one by its number). One object for the whole program, so codes
/// compare equal across libknit.so and the program. knit::async_run's
/// boost::system::error_code has a category of its own with the same name, values and
/// messages (knit::boost_error_category(), knit/async_run.hpp).
KNIT_API const std::error_category& error_category() noexcept;

/// Makes a std::error_code of error_category() from `e`; also what lets
/// `std::error_code ec = knit::errc::...` and comparisons with errc compile.
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// @brief Thrown by pool_options::from_env / validate (and so by pool's constructor) for bad
/// configuration; what() names the setting and the offending value.
class KNIT_API config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace knit

template <>
struct std::is_error_code_enum<knit::errc> : std::true_type {};
