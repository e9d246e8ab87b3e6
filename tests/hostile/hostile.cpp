// tests/hostile: knit tested as an adversary would, through the installed package only
// (find_package(knit), <knit/knit.hpp> and <knit/process.hpp>). Each check runs a process
// task that attacks its host from inside the strict sandbox (hostile_tasks.cpp), then checks
// that only the attacker's own call failed and that the host survived and keeps serving.
// Prints "PASS name" / "FAIL name: why" per check, then "N passed, M failed"; exits non-zero
// when M > 0. Run it with stderr a pipe (run_installed.sh does): the stdio attack needs one.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <knit/knit.hpp>
#include <knit/process.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "hostile_driver.hpp"
#include "hostile_tasks.hpp"

namespace hostile {
namespace {

using namespace std::chrono_literals;

const char* const secret = "s3cr3t";

// Runs check `name` (a function returning "" for a pass, else why it failed) under the
// watchdog's `budget`; an exception is a FAIL.
void run_check(const std::string& name, steady::duration budget,
               const std::function<std::string()>& check) {
  begin_check(name, budget);
  std::string why;
  try {
    why = check();
  } catch (const std::exception& e) {
    why = std::string("threw: ") + e.what();
  }
  if (why.empty()) {
    pass(name);
  } else {
    fail(name, why);
  }
}

// `attack` with `input` on `h`, waited for (bounded); notes what came of it.
const call_record& attack(host& h, const std::string& name, const std::string& task,
                          const std::string& input) {
  const call_record& call = h.submit(task, input);
  h.wait(call, 10s);
  note(name, "the attack's own call: " + call.describe());
  return call;
}

// The host's fds 1 and 2 as the stdio attack would change them: flags and owner.
std::string stdio_state() {
  std::string s;
  for (int fd : {1, 2}) {
    s += std::to_string(fd) + ":fl=" + std::to_string(::fcntl(fd, F_GETFL)) +
         ",own=" + std::to_string(::fcntl(fd, F_GETOWN)) + " ";
  }
  return s;
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// Children of this process left as zombies (state Z in /proc/<pid>/stat).
std::vector<std::string> zombie_children() {
  std::vector<std::string> zombies;
  const std::string me = std::to_string(::getpid());
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto close = stat.rfind(')');  // the name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid == me && state == "Z") zombies.push_back(e.path().filename().string());
  }
  return zombies;
}

std::string stdio_sigkill() {
  host h(2, 2);
  const std::string before = stdio_state();
  attack(h, "stdio_sigkill", "stdio_sigkill", std::to_string(::getpid()));
  std::string why;
  if (!h.echo_ok("after stdio", 5s, why)) return why;
  const std::string after = stdio_state();
  if (after != before) return "the host's stdio changed: " + before + "-> " + after;
  return "";
}

std::string block_request_bell() {
  host h(2, 2);
  attack(h, "block_request_bell", "block_request_bell", "");
  std::vector<const call_record*> calls;
  // A stuck limit of 2 s on each: a jammed child is killed by then, and a call it never
  // started can go to another; 8 s bounds them all.
  for (int i = 0; i < 20; ++i) {
    calls.push_back(&h.submit("echo", "bell " + std::to_string(i), 2s));
  }
  h.wait([&] { return std::ranges::all_of(calls, [](auto* c) { return c->done(); }); }, 8s);
  int failed = 0;
  std::string first;
  for (const call_record* c : calls) {
    if (c->ok_with(c->input)) continue;
    if (failed++ == 0) first = "'" + c->input + "': " + c->describe();
  }
  if (failed > 0) return std::to_string(failed) + " of 20 calls failed, first " + first;
  return "";
}

std::string spin_host() {
  host h(2, 2);
  const auto kills_before = knit::current_process_stats().protocol_kills;
  const call_record& call = attack(h, "spin_host", "spin_host", "");
  h.idle(1s);  // the host's grace to see the broken child and kill it
  const double cpu_before = cpu_seconds();
  h.idle(1s);
  const double cpu = cpu_seconds() - cpu_before;
  const auto kills = knit::current_process_stats().protocol_kills - kills_before;
  note("spin_host", "host CPU over 1 s idle: " + std::to_string(cpu) + " s; protocol_kills +" +
                        std::to_string(kills));
  if (cpu >= 0.2) return "the host spent " + std::to_string(cpu) + " s of CPU in 1 s idle";
  if (kills == 0 && call.ok()) return "the ringing child was not killed (protocol_kills +0)";
  std::string why;
  for (int i = 0; i < 4; ++i) {
    if (!h.echo_ok("after spin " + std::to_string(i), 5s, why)) return why;
  }
  return "";
}

std::string forge_next_answer() {
  host h(2, 2);
  attack(h, "forge_next_answer", "forge_next_answer", "");
  std::string why;
  for (int i = 0; i < 10; ++i) {
    if (!h.echo_ok("client " + std::to_string(i), 5s, why)) return why;
  }
  return "";
}

std::string read_host() {
  host h(2, 2);
  std::ostringstream input;
  input << ::getpid() << ' ' << std::hex
        << reinterpret_cast<std::uintptr_t>(std::getenv("HOSTILE_SECRET"));
  const call_record& call = attack(h, "read_host", "read_host", input.str());
  if (call.ok()) {
    // "label=...; " parts: the host's own files must give nothing; pid 1's environment
    // only when pid 1 is not the child itself.
    // init_environ comes last and is taken whole: an environment value may hold a ';'.
    const std::string& answer = call.result->value();
    const std::size_t init_at = answer.find("init_environ=");
    const std::string got = answer.substr(0, init_at);
    const std::string init_environ = init_at == std::string::npos ? "" : answer.substr(init_at);
    const bool init_is_self = got.find("init=self") != std::string::npos;
    if (!init_is_self && init_environ.find(secret) != std::string::npos) {
      return "read the host's secret: " + init_environ.substr(0, 80);
    }
    bool mem_denied = false, environ_denied = false;
    std::istringstream parts(got);
    for (std::string part; std::getline(parts, part, ';');) {
      part.erase(0, part.find_first_not_of(' '));
      mem_denied = mem_denied || part.starts_with("mem=denied");
      environ_denied = environ_denied || part.starts_with("environ=denied");
      if (part.find(secret) != std::string::npos) {
        return "read the host's secret: " + part.substr(0, 80);
      }
    }
    if (!mem_denied || !environ_denied) {
      return "an open of the host's /proc files succeeded: " + call.describe();
    }
  } else if (!call.failed_with(knit::errc::sandbox_violation)) {
    return "the attack neither answered nor met the sandbox: " + call.describe();
  }
  std::string why;
  return h.echo_ok("after read_host", 5s, why) ? "" : why;
}

// Whether an unsandboxed process of this binary may enter the kernel through int $0x80: a
// forked child tries getpid that way (it only does that and _exit, safe after fork).
bool kernel_takes_int80() {
#if defined(__x86_64__)
  const pid_t pid = ::fork();
  if (pid < 0) return true;  // cannot tell: expect the sandbox to be what refuses it
  if (pid == 0) {
    long ret = 0;
    asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
    ::_exit(ret > 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return !(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
#else
  return true;
#endif
}

std::string foreign_abi(const std::string& abi) {
#if !defined(__x86_64__)
  note("foreign_abi_" + abi, "not x86_64: nothing to try");
  return "";
#endif
  // Some kernels refuse the i386 entry from a 64-bit process outright (ia32_emulation off,
  // some VM guests): int $0x80 is a SIGSEGV before any filter sees it, sandbox or not.
  const bool kernel_refuses = abi == "i386" && !kernel_takes_int80();
  if (kernel_refuses) {
    note("foreign_abi_i386", "this kernel refuses int $0x80 itself (SIGSEGV unsandboxed)");
  }
  host h(2, 2);
  const call_record& call = attack(h, "foreign_abi_" + abi, "foreign_abi", abi);
  const knit::errc want =
      kernel_refuses ? knit::errc::worker_crashed : knit::errc::sandbox_violation;
  if (!call.failed_with(want)) {
    return std::string("want ") + (kernel_refuses ? "worker_crashed" : "sandbox_violation") +
           ", got " + call.describe();
  }
  std::string why;
  return h.echo_ok("after " + abi, 5s, why) ? "" : why;
}

std::string forged_violation() {
  host h(2, 2);
  const call_record& call = attack(h, "forged_violation", "forged_violation", "");
  if (!call.failed_with(knit::errc::worker_crashed)) {
    return "want worker_crashed, got " + call.describe();
  }
  const std::string message = knit::failure_message(*call.result);
  // The forged word, whole or as its halves less the "+ 1" of the encoding.
  for (const char* forged :
       {"18446744073709551614", "18446744073709551613", "4294967294", "4294967293"}) {
    if (message.find(forged) != std::string::npos) {
      return "the forged word reached the message: " + message;
    }
  }
  std::string why;
  return h.echo_ok("after forged_violation", 5s, why) ? "" : why;
}

std::string only_the_attackers_call() {
  host h(1, 2);
  const call_record& crash = h.submit("sleep_then_crash", "");
  std::vector<const call_record*> echoes;
  for (int i = 0; i < 5; ++i) echoes.push_back(&h.submit("echo", "behind " + std::to_string(i)));
  h.wait(
      [&] {
        return crash.done() && std::ranges::all_of(echoes, [](auto* c) { return c->done(); });
      },
      10s);
  if (!crash.failed_with(knit::errc::worker_crashed)) {
    return "the crashing call: want worker_crashed, got " + crash.describe();
  }
  for (const call_record* c : echoes) {
    if (!c->ok_with(c->input)) return "'" + c->input + "': " + c->describe();
  }
  return "";
}

std::string slow_call_holds_none() {
  host h(2, 4);
  const call_record& slow = h.submit("sleep_ms", "2000");
  std::vector<const call_record*> echoes;
  for (int i = 0; i < 6; ++i) echoes.push_back(&h.submit("echo", "quick " + std::to_string(i)));
  h.wait(
      [&] { return slow.done() && std::ranges::all_of(echoes, [](auto* c) { return c->done(); }); },
      6s);
  for (const call_record* c : echoes) {
    if (!c->ok_with(c->input)) return "'" + c->input + "': " + c->describe();
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(c->answered - c->submitted);
    if (ms > 1s) return "'" + c->input + "' took " + std::to_string(ms.count()) + " ms";
  }
  if (!slow.ok_with("slept 2000")) return "the slow call: " + slow.describe();
  return "";
}

// After every attack (their pools gone): a fresh pool of 2 threads serves, the process has
// at most 2 x threads + 2 children live, and none is a zombie (one reaped within 2 s is only
// a kill in flight).
std::string no_leftovers() {
  host h(2, 2);
  std::string why;
  if (!h.echo_ok("last", 5s, why)) return why;
  const auto live = knit::current_process_stats().children_live;
  if (live > 2 * 2 + 2) return "children_live " + std::to_string(live) + " > 6";
  std::vector<std::string> zombies;
  h.wait([&] { return (zombies = zombie_children()).empty(); }, 2s);
  if (!zombies.empty()) {
    return "zombie children: " + zombies.front() + " and " + std::to_string(zombies.size() - 1) +
           " more";
  }
  return "";
}

}  // namespace
}  // namespace hostile

int main(int argc, char** argv) {
  hostile::register_tasks();  // all tasks first, in the host and in each child alike
  if (knit::worker_main(argc, argv)) return 0;
  // Before any child starts: a child gets the host's environment at spawn, so only the
  // host's own /proc files are what read_host must not reach.
  ::setenv("HOSTILE_SECRET", hostile::secret, 1);
  using namespace std::chrono_literals;
  hostile::start_watchdog(58s);
  hostile::run_check("stdio_sigkill", 12s, hostile::stdio_sigkill);
  hostile::run_check("block_request_bell", 12s, hostile::block_request_bell);
  hostile::run_check("spin_host", 12s, hostile::spin_host);
  hostile::run_check("forge_next_answer", 12s, hostile::forge_next_answer);
  hostile::run_check("read_host", 12s, hostile::read_host);
  hostile::run_check("foreign_abi_i386", 12s, [] { return hostile::foreign_abi("i386"); });
  hostile::run_check("foreign_abi_x32", 12s, [] { return hostile::foreign_abi("x32"); });
  hostile::run_check("forged_violation", 12s, hostile::forged_violation);
  hostile::run_check("only_the_attackers_call", 12s, hostile::only_the_attackers_call);
  hostile::run_check("slow_call_holds_none", 12s, hostile::slow_call_holds_none);
  hostile::run_check("no_leftovers", 12s, hostile::no_leftovers);
  return hostile::summary();
}
