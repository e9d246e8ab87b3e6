// How a child ended, in words for an error message: "killed by signal 11 (SIGSEGV)",
// "exited with code 3".
#pragma once

#include <signal.h>

#include <string>

namespace knit::detail {

// `info` as waitid(WEXITED) filled it.
std::string describe_exit(const siginfo_t& info);

}  // namespace knit::detail
