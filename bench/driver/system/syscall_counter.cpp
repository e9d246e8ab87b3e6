// perf stat around a window (syscall_counter.hpp).
#include "driver/system/syscall_counter.hpp"

#include <csignal>
#include <fstream>
#include <sstream>
#include <utility>

#include "driver/system/process_tree.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {

syscall_counter::syscall_counter(pid_t root, std::string out_path) : out_(std::move(out_path)) {
  const std::string perf = find_in_path("perf");
  if (perf.empty()) return;
  std::string pids;
  for (const proc_entry& p : process_tree(root)) {
    if (!pids.empty()) pids += ',';
    pids += std::to_string(p.pid);
  }
  if (pids.empty()) return;
  spawn_spec spec;
  spec.exe = perf;
  spec.argv = {"perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", pids, "-o", out_};
  spec.env = child_environment({});
  try {
    perf_ = spawn_process(spec);
  } catch (const std::exception&) {
    perf_ = -1;  // no count: the row says n/a
  }
}

syscall_counter::~syscall_counter() {
  if (perf_ > 0) stop_process(perf_, 2.0);
}

std::optional<std::uint64_t> syscall_counter::finish() {
  if (perf_ <= 0) return std::nullopt;
  ::kill(perf_, SIGINT);
  const auto status = wait_exit(perf_, 5.0);
  if (!status) stop_process(perf_, 1.0);
  perf_ = -1;
  std::ifstream in(out_);
  std::stringstream text;
  text << in.rdbuf();
  return parse_perf_syscalls(text.str());
}

std::optional<std::uint64_t> parse_perf_syscalls(std::string_view perf_csv) {
  // Lines "COUNT,UNIT,EVENT,..." (comments start with #).
  std::size_t at = 0;
  while (at < perf_csv.size()) {
    std::size_t end = perf_csv.find('\n', at);
    if (end == std::string_view::npos) end = perf_csv.size();
    const std::string_view line = perf_csv.substr(at, end - at);
    at = end + 1;
    if (line.find("raw_syscalls:sys_enter") == std::string_view::npos) continue;
    const std::string_view count = line.substr(0, line.find(','));
    if (count.empty()) return std::nullopt;
    std::uint64_t n = 0;
    for (char ch : count) {
      if (ch < '0' || ch > '9') return std::nullopt;
      n = n * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    return n;
  }
  return std::nullopt;
}

}  // namespace knit::bench
