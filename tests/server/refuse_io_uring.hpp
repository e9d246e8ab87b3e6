// A seccomp filter that refuses io_uring_setup with EPERM, as a container runtime's default
// profile or `kernel.io_uring_disabled` would: for the tests of KNIT_IO's fallback. Only
// system calls, no allocation: safe in a child between fork and exec.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>

namespace knit_test {

// Installs the filter on the calling thread (and what it execs). False when refused.
inline bool refuse_io_uring() noexcept {
  // io_uring_setup is 425 on every architecture (a system call added after the tables were
  // unified), so the filter does not look at the architecture.
  static sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  static sock_fprog program = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]),
                               filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

}  // namespace knit_test
