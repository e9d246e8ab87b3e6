// pidfd calls through syscall(2): glibc 2.36 declares pidfd_open and pidfd_send_signal in
// <sys/pidfd.h> without extern "C", so C++ cannot link them; waitid's P_PIDFD (Linux 5.4)
// is in <linux/wait.h> but not in glibc's headers.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace knit::detail {

inline int open_pidfd(pid_t pid) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

inline int signal_pidfd(int pidfd, int sig) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

inline constexpr idtype_t p_pidfd = static_cast<idtype_t>(3);

}  // namespace knit::detail
