// The system calls a server's process tree makes over the measured window, counted by perf
// (`perf stat -e raw_syscalls:sys_enter -p PIDS`): a row's "syscalls per request" beside its CPU
// per request. Without perf, or where perf may not count (perf_event_paranoid, no tracefs), the
// count is absent and the report says n/a.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace knit::bench {

class syscall_counter {
 public:
  // Starts perf on the tree's processes as they are now (every thread of each; nginx: the
  // master and its workers). perf attaches within milliseconds; the few calls it misses at
  // the window's start are a small undercount. Nothing starts when perf is not in PATH.
  // `out_path`: perf's output file, kept beside the row's logs.
  syscall_counter(pid_t root, std::string out_path);
  ~syscall_counter();

  syscall_counter(const syscall_counter&) = delete;
  syscall_counter& operator=(const syscall_counter&) = delete;

  // Stops perf (SIGINT: it then writes its counts) and returns the count; nullopt when perf
  // was absent, failed, or did not count.
  std::optional<std::uint64_t> finish();

 private:
  pid_t perf_ = -1;
  std::string out_;
};

// The raw_syscalls:sys_enter count in `perf stat -x,` output, nullopt when it has none (e.g.
// "<not supported>" or "<not counted>").
std::optional<std::uint64_t> parse_perf_syscalls(std::string_view perf_csv);

}  // namespace knit::bench
