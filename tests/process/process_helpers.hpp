// Helpers of the process tests: run process calls through a pool and wait for them, and
// read /proc (fds, memfd mappings, children and their state).
#pragma once

#include <dirent.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"

namespace knit_test {

// Waits (10 s at most, polling every 2 ms) for `done()`; no call is made meanwhile.
template <class Done>
bool within_10s(Done done) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// The process options of the pools a test builds next with threads() (each pool has its
// own: pool_options::process). Reset to the defaults before each test (process_test_main).
inline knit::process_options& test_process_options() {
  static knit::process_options options;
  return options;
}
inline void use_process_options(const knit::process_options& options) {
  options.validate();
  test_process_options() = options;
}

// Pool options with `n` worker threads and the test's process options, the rest default.
inline knit::pool_options threads(unsigned n) {
  knit::pool_options o;
  o.threads = n;
  o.process = test_process_options();
  return o;
}

struct process_call {
  std::string task;
  std::string bytes;
  std::optional<knit::result<std::string>> result;
};

// Submits every call at once (each with `options`) and drains until all are delivered (30 s
// at most). Returns false on a timeout or a refused submit.
inline bool run_calls(knit::pool& pool, std::vector<process_call>& calls,
                      knit::call_options options = {}) {
  std::size_t done = 0;
  for (process_call& c : calls) {
    auto ec = knit::submit_process(
        pool, c.task, c.bytes,
        [&c, &done](knit::result<std::string> r) {
          c.result.emplace(std::move(r));
          ++done;
        },
        options);
    if (ec) return false;
  }
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done < calls.size()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 10);
    pool.drain();
  }
  return true;
}

// One call, waited for. A call the harness gave up on (30 s, or a refused submit) comes back
// as errc::cancelled, which no test here expects, not as timed_out, which a test with a
// deadline does.
inline knit::result<std::string> run_one(knit::pool& pool, std::string task, std::string bytes,
                                         knit::call_options options = {}) {
  std::vector<process_call> calls{{std::move(task), std::move(bytes), std::nullopt}};
  if (!run_calls(pool, calls, options)) return knit::result<std::string>(knit::errc::cancelled);
  return std::move(*calls[0].result);
}

// The text of a /proc file, "" when it cannot be read. A read racing the process's exit
// fails with ESRCH, which the stream throws (basic_filebuf::underflow): gone, not an error.
inline std::string read_proc_file(const std::string& path) {
  try {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {
    return {};
  }
}

inline std::size_t open_fd_count() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
  }
  return n - 1;  // the directory's own fd
}

inline std::size_t memfd_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:knit-proc") != std::string::npos) ++n;
  }
  return n;
}

struct child_info {
  int pid;
  char state;
};

// The processes whose parent is `parent`, with their state ('Z' = zombie).
inline std::vector<child_info> children_of(int parent) {
  std::vector<child_info> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string text = read_proc_file(std::string("/proc/") + e->d_name + "/stat");
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back({std::stoi(e->d_name), state});
  }
  ::closedir(d);
  return out;
}

inline std::vector<child_info> children_of_this_process() { return children_of(::getpid()); }

// The state letter of `pid` from /proc/PID/stat, or 0 when it is gone.
inline char process_state(int pid) {
  const std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return 0;
  return text[close + 2];
}

inline std::string process_comm(int pid) {
  std::string name = read_proc_file("/proc/" + std::to_string(pid) + "/comm");
  if (const auto end = name.find('\n'); end != std::string::npos) name.resize(end);
  return name;
}

// The pids of every live process (not a zombie) whose comm starts with `prefix` (comm is
// cut at 15 bytes).
inline std::vector<int> all_processes_named(const std::string& prefix) {
  std::vector<int> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int pid = std::stoi(e->d_name);
    if (process_comm(pid).rfind(prefix, 0) == 0 && process_state(pid) != 'Z') out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

}  // namespace knit_test
