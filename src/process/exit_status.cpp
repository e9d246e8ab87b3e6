// child_exit and describe_exit: a waitid result kept and in words (exit_status.hpp).
#include "process/exit_status.hpp"

#include <string.h>

namespace knit::detail {

child_exit exit_of(const siginfo_t& info) noexcept {
  switch (info.si_code) {
    case CLD_EXITED:
    case CLD_KILLED:
    case CLD_DUMPED: return child_exit{info.si_code, info.si_status};
    default: return child_exit{};  // a stop or a continue: not an end (WEXITED asks for none)
  }
}

std::string describe_exit(const child_exit& how) {
  switch (how.code) {
    case CLD_EXITED: return "exited with code " + std::to_string(how.status);
    case CLD_KILLED:
    case CLD_DUMPED: {
      const char* abbrev = ::sigabbrev_np(how.status);
      std::string s = "killed by signal " + std::to_string(how.status);
      if (abbrev) s += std::string(" (SIG") + abbrev + ")";
      if (how.code == CLD_DUMPED) s += ", core dumped";
      return s;
    }
    default: return "ended (how is not known)";
  }
}

std::string describe_exit(const siginfo_t& info) {
  const child_exit how = exit_of(info);
  if (!how.known()) return "ended (si_code " + std::to_string(info.si_code) + ")";
  return describe_exit(how);
}

}  // namespace knit::detail
