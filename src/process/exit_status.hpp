// How a child ended, as the kernel reported it (waitid): kept in structured form, so that the
// host decides from the kernel's words (sandbox.hpp, judge_death), and in words for an error
// message: "killed by signal 11 (SIGSEGV)", "exited with code 3".
#pragma once

#include <signal.h>

#include <string>

namespace knit::detail {

// The two fields of waitid(WEXITED)'s siginfo_t that say how a child ended. Nothing the child
// wrote: only what the kernel reported.
struct child_exit {
  // (Not named si_code, si_status: glibc defines si_status as a macro.)
  int code = 0;    // si_code: CLD_EXITED, CLD_KILLED or CLD_DUMPED; 0: not known (not reaped
                   // yet, or its status was not available)
  int status = 0;  // si_status: the exit code (CLD_EXITED) or the signal (KILLED, DUMPED)

  bool known() const noexcept { return code != 0; }
  bool exited_with(int exit_code) const noexcept {
    return code == CLD_EXITED && status == exit_code;
  }
  bool killed_by(int signal) const noexcept {
    return (code == CLD_KILLED || code == CLD_DUMPED) && status == signal;
  }
};

// `info` as waitid(WEXITED) filled it.
child_exit exit_of(const siginfo_t& info) noexcept;

std::string describe_exit(const child_exit& how);
std::string describe_exit(const siginfo_t& info);

}  // namespace knit::detail
