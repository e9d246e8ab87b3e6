// One external peer for one case: run its command under /bin/sh, wait until it accepts
// connections, prove the listener is its own, stop the whole process tree.
#include "driver/peer_process.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include "driver/identity.hpp"
#include "driver/interrupt.hpp"
#include "driver/load_run.hpp"
#include "driver/numfmt.hpp"
#include "driver/port.hpp"
#include "driver/spawn.hpp"

namespace knit::bench {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n    " + x;
  return s;
}

}  // namespace

peer_process::peer_process(peer_options opts) : opts_(std::move(opts)) {
  const std::string who = "peer " + opts_.name;
  std::string why;
  if (!port_is_free(opts_.host, opts_.port, &why))
    throw case_error(who + ": port " + std::to_string(opts_.port) + " is not free (" + why +
                    "); refusing to start, so that a stale server is never measured");
  argv_ = {"/bin/sh", "-c", opts_.command};
  spawn_spec sp;
  sp.exe = "/bin/sh";
  sp.argv = argv_;
  sp.env = child_environment(opts_.env);
  sp.output_path = opts_.log_path;
  sp.cpus = opts_.cpus;
  {
    std::ofstream truncate(opts_.log_path, std::ios::trunc);
  }
  try {
    pid_ = spawn_process(sp);  // its own process group: pgid == pid_
    pgid_ = pid_;
  } catch (const std::exception& e) {
    throw case_error(who + ": " + e.what());
  }
  try {
    wait_ready();
    // Only our tree may listen on the port: a stray server there would take our load.
    auto tree = process_tree(pid_);
    seen_.insert(seen_.end(), tree.begin(), tree.end());
    std::vector<pid_t> pids;
    for (const auto& p : tree) pids.push_back(p.pid);
    auto problems = check_socket_owner(pids, opts_.port, who + " (PID " + std::to_string(pid_) + " and the " +
                                                             std::to_string(pids.size() - 1) + " process(es) it started)");
    if (!problems.empty()) throw case_error(who + ": socket check failed:" + join_lines(problems));
  } catch (...) {
    stop();
    throw;
  }
}

peer_process::~peer_process() {
  if (pid_ > 0) {
    try {
      stop();
    } catch (...) {
    }
  }
}

void peer_process::check_alive(const char* phase) {
  if (pid_ <= 0) throw case_error("peer " + opts_.name + " not running during " + phase);
  if (auto st = reap_nohang(pid_)) {
    pid_t dead = pid_;
    pid_ = -1;  // reaped; whatever it started is still in seen_, for stop() to end
    throw case_error("peer " + opts_.name + " (PID " + std::to_string(dead) + ") exited during " + phase + " (" +
                    st->text() + "); a peer must stay in the foreground (nginx: daemon off;); log: " +
                    file_tail(opts_.log_path));
  }
}

void peer_process::wait_ready() {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (interrupted()) throw case_error("interrupted while waiting for peer " + opts_.name);
    check_alive("start-up");
    // Remember the tree as it grows, so that stop() finds even a child that left the group.
    for (const auto& p : process_tree(pid_))
      if (std::find(seen_.begin(), seen_.end(), p) == seen_.end()) seen_.push_back(p);
    if (tcp_connect_ok(opts_.host, opts_.port, 200)) return;
    if (since(t0) > opts_.ready_timeout_s)
      throw case_error("peer " + opts_.name + ": nothing accepted connections on " + opts_.host + ":" +
                      std::to_string(opts_.port) + " within " + seconds_text(opts_.ready_timeout_s) +
                      " s of starting `" + opts_.command + "`; log: " + file_tail(opts_.log_path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string peer_process::stop() {
  if (pid_ <= 0 && pgid_ <= 0 && seen_.empty()) return "";
  const pid_t root = pid_;  // -1 when check_alive() already reaped it
  const pid_t group = pgid_;
  pid_ = -1;
  pgid_ = -1;
  std::vector<proc_entry> tree = seen_;
  seen_.clear();
  if (group > 0)
    for (const auto& p : process_tree(group))  // the root if alive, its descendants and its group
      if (std::find(tree.begin(), tree.end(), p) == tree.end()) tree.push_back(p);
  // Signals go to the group (pgid == root) and, by PID and only while the same process
  // (start time) runs, to every member seen: one that left the group is ended too.
  auto signal_all = [&](int sig) {
    if (group > 0) ::kill(-group, sig);
    for (const auto& p : tree)
      if (p.pid != root && still_running(p)) ::kill(p.pid, sig);
  };
  std::optional<exit_status> root_status;
  auto all_gone = [&] {
    if (root > 0 && !root_status) root_status = reap_nohang(root);
    if (root > 0 && !root_status) return false;
    if (group > 0 && ::kill(-group, 0) == 0) return false;  // a group member still exists
    return std::none_of(tree.begin(), tree.end(), [&](const proc_entry& p) { return p.pid != root && still_running(p); });
  };
  auto wait_gone = [&](double s) {
    auto t0 = std::chrono::steady_clock::now();
    while (!all_gone()) {
      if (since(t0) > s) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  };
  std::string note;
  signal_all(SIGTERM);
  if (!wait_gone(opts_.stop_grace_s)) {
    note = "peer " + opts_.name + " ignored SIGTERM for " + seconds_text(opts_.stop_grace_s) + " s; sent SIGKILL";
    signal_all(SIGKILL);
    if (!wait_gone(10.0))
      throw fatal_error("peer " + opts_.name + ": processes of PID " + std::to_string(group) +
                       "'s tree survived SIGKILL for 10 s");
  } else if (root_status && (!root_status->exited || root_status->code != 0)) {
    // A shell killed by SIGTERM is the expected end of a peer that never exits on its own.
    if (!(root_status->signal == SIGTERM)) note = "peer " + opts_.name + " exited with " + root_status->text();
  }
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  while (!port_is_free(opts_.host, opts_.port, &why)) {
    if (since(t0) > opts_.port_free_timeout_s)
      throw fatal_error("port " + std::to_string(opts_.port) + " still busy " + seconds_text(opts_.port_free_timeout_s) +
                       " s after peer " + opts_.name + " stopped: " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return note;
}

}  // namespace knit::bench
