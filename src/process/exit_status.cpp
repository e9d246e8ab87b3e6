// describe_exit: a waitid result in words (exit_status.hpp).
#include "process/exit_status.hpp"

#include <string.h>

namespace knit::detail {

std::string describe_exit(const siginfo_t& info) {
  switch (info.si_code) {
    case CLD_EXITED: return "exited with code " + std::to_string(info.si_status);
    case CLD_KILLED:
    case CLD_DUMPED: {
      const char* abbrev = ::sigabbrev_np(info.si_status);
      std::string s = "killed by signal " + std::to_string(info.si_status);
      if (abbrev) s += std::string(" (SIG") + abbrev + ")";
      if (info.si_code == CLD_DUMPED) s += ", core dumped";
      return s;
    }
    default: return "ended (si_code " + std::to_string(info.si_code) + ")";
  }
}

}  // namespace knit::detail
