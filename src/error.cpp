// knit's std::error_category: names and messages for knit::errc.
#include "knit/error.hpp"

namespace knit {
namespace {

class category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "knit"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::queue_full:
        return "knit: the pool's max_pending limit is reached; call not accepted";
      case errc::timed_out: return "knit: the call's deadline passed before its result arrived";
      case errc::cancelled:
        return "knit: the call was cancelled (before it ran, or by shutdown's deadline)";
      case errc::shut_down: return "knit: the pool is shut down; call not accepted";
      case errc::task_failed: return "knit: the task threw an exception";
      case errc::stuck:
        return "knit: the call ran past stuck_after; its worker was replaced and a late result is "
               "discarded";
      case errc::worker_crashed:
        return "knit: the process worker running the call died or broke the protocol";
      case errc::payload_too_large:
        return "knit: the process task's request or answer is over the arena bound";
      case errc::worker_start_failed: return "knit: the process worker could not be started";
      case errc::sandbox_violation:
        return "knit: the process task made a system call its sandbox refuses";
      case errc::memory_limit: return "knit: the process task went over its memory limit";
      case errc::wrong_thread:
        return "knit: called off the thread of the host it names; call not accepted";
    }
    return "knit: unknown error " + std::to_string(value);
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const category_impl instance;
  return instance;
}

}  // namespace knit
