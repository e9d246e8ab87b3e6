// Asserts from /proc that a PID is the server we started: binary, command line,
// environment, and ownership of the listening socket.
#include "driver/system/identity.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "driver/system/port.hpp"

namespace knit::bench {
namespace {

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\0', start);
    if (end == std::string::npos) end = s.size();
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string proc(pid_t pid, const char* leaf) {
  return "/proc/" + std::to_string(pid) + "/" + leaf;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += ' ';
    s += x;
  }
  return s;
}

}  // namespace

std::string canonical_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  return path;
}

std::optional<std::string> read_exe(pid_t pid) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(proc(pid, "exe").c_str(), buf, sizeof buf - 1);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

std::optional<std::vector<std::string>> read_cmdline(pid_t pid) {
  auto s = slurp(proc(pid, "cmdline"));
  if (!s) return std::nullopt;
  return split_nul(*s);
}

std::optional<std::map<std::string, std::string>> read_environ(pid_t pid) {
  auto s = slurp(proc(pid, "environ"));
  if (!s) return std::nullopt;
  std::map<std::string, std::string> env;
  for (const auto& kv : split_nul(*s)) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

std::vector<unsigned long> socket_inodes(pid_t pid) {
  std::vector<unsigned long> inodes;
  std::string dir = proc(pid, "fd");
  DIR* d = ::opendir(dir.c_str());
  if (!d) return inodes;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char buf[128];
    ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), buf, sizeof buf - 1);
    if (n <= 0) continue;
    std::string link(buf, static_cast<size_t>(n));
    if (link.rfind("socket:[", 0) == 0 && link.back() == ']')
      inodes.push_back(std::stoul(link.substr(8, link.size() - 9)));
  }
  ::closedir(d);
  return inodes;
}

namespace {

// Every mismatch between what /proc shows for `pid` and `expected`.
std::vector<std::string> compare_identity(pid_t pid, const std::string& who,
                                          const expected_identity& expected) {
  std::vector<std::string> problems;

  auto exe = read_exe(pid);
  std::string want_exe = canonical_path(expected.exe);
  if (!exe) problems.push_back(who + ": cannot read /proc/" + std::to_string(pid) + "/exe");
  else if (*exe != want_exe)
    problems.push_back(who + ": exe is " + *exe + ", expected " + want_exe);

  auto cmd = read_cmdline(pid);
  if (!cmd) problems.push_back(who + ": cannot read cmdline");
  else if (*cmd != expected.argv)
    problems.push_back(who + ": cmdline is \"" + join(*cmd) + "\", expected \"" +
                       join(expected.argv) + "\"");

  auto env = read_environ(pid);
  if (!env) {
    problems.push_back(who + ": cannot read environ");
  } else {
    for (const auto& [k, v] : expected.env) {
      auto it = env->find(k);
      if (it == env->end())
        problems.push_back(who + ": " + k + " is unset, expected \"" + v + "\"");
      else if (it->second != v)
        problems.push_back(who + ": " + k + "=\"" + it->second + "\", expected \"" + v + "\"");
    }
    // Unset must mean unset: a KNIT_* we did not ask for changes the configuration.
    for (const auto& [k, v] : *env)
      if (k.rfind("KNIT_", 0) == 0 && !expected.env.count(k))
        problems.push_back(who + ": unexpected " + k + "=\"" + v + "\" in its environment");
  }
  return problems;
}

// "PID N has exited (zombie)", "... is exiting", "... does not exist", or nullopt while it
// runs. "Exiting" is PF_EXITING (0x4) in /proc/PID/stat's flags (field 9): do_exit() sets
// it first, then drops the address space (from then on exe is unreadable and cmdline and
// environ read empty), and only later does the process become a zombie.
std::optional<std::string> exit_state(pid_t pid, const std::string& who) {
  constexpr unsigned long kPfExiting = 0x4;
  auto stat = slurp(proc(pid, "stat"));
  if (!stat) return who + " does not exist";
  auto rp = stat->rfind(')');
  if (rp == std::string::npos) return std::nullopt;
  std::istringstream fields(stat->substr(rp + 1));
  std::string state, skip;
  unsigned long flags = 0;
  fields >> state >> skip >> skip >> skip >> skip >> skip >> flags;  // fields 3..9
  if (state == "Z" || state == "X") return who + " has exited (zombie)";
  if (flags & kPfExiting) return who + " has exited (exiting)";
  return std::nullopt;
}

}  // namespace

std::vector<std::string> check_process_identity(pid_t pid, const expected_identity& expected) {
  const std::string who = "PID " + std::to_string(pid);
  // A zombie has no exe link, an empty cmdline and no environ; say so rather than report
  // three mismatches.
  if (auto gone = exit_state(pid, who)) return {*gone};
  std::vector<std::string> problems = compare_identity(pid, who, expected);
  // The process may have exited between the look above and the reads (a server that
  // fails to bind exits within a millisecond): its empty cmdline and environ are then
  // the signs of that exit, not of a wrong process. Exit is final, so a second look
  // after the reads settles it: still running now means it was running during them.
  if (!problems.empty())
    if (auto gone = exit_state(pid, who)) return {*gone};
  return problems;
}

std::vector<std::string> check_socket_owner(pid_t pid, int port) {
  auto listening = listening_inodes(port);
  if (listening.empty()) return {"nothing is listening on port " + std::to_string(port)};
  auto owned = socket_inodes(pid);
  std::vector<std::string> problems;
  for (unsigned long ino : listening)
    if (std::find(owned.begin(), owned.end(), ino) == owned.end())
      problems.push_back("listening socket inode " + std::to_string(ino) + " on port " +
                         std::to_string(port) + " does not belong to PID " + std::to_string(pid));
  return problems;
}

std::vector<std::string> check_socket_owner(const std::vector<pid_t>& pids, int port,
                                            const std::string& who) {
  auto listening = listening_inodes(port);
  if (listening.empty()) return {"nothing is listening on port " + std::to_string(port)};
  std::vector<unsigned long> owned;
  for (pid_t p : pids) {
    auto s = socket_inodes(p);
    owned.insert(owned.end(), s.begin(), s.end());
  }
  std::vector<std::string> problems;
  for (unsigned long ino : listening)
    if (std::find(owned.begin(), owned.end(), ino) == owned.end())
      problems.push_back("listening socket inode " + std::to_string(ino) + " on port " +
                         std::to_string(port) + " does not belong to " + who);
  return problems;
}

}  // namespace knit::bench
