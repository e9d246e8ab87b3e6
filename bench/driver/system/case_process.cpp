// The server under test for one case, knit-server or an external peer: start it on a free
// port, prove it is the process (tree) we meant, wait until it serves, stop it by PID.
#include "driver/system/case_process.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "driver/run/load_run.hpp"
#include "driver/run/numfmt.hpp"
#include "driver/system/identity.hpp"
#include "driver/system/interrupt.hpp"
#include "driver/system/port.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n    " + x;
  return s;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string find_listening_line(const std::string& log_text) {
  std::istringstream in(log_text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("listening on", 0) == 0) return line;
  return "";
}

case_process::case_process(process_options opts) : opts_(std::move(opts)) {
  std::string why;
  if (!port_is_free(opts_.host, opts_.port, &why))
    throw case_error((is_peer() ? who() + ": " : "") + "port " + std::to_string(opts_.port) +
                     " is not free (" + why +
                     "); refusing to start, so that a stale server is never measured");
  start();
  try {
    if (is_peer()) {
      wait_peer_ready();
    } else {
      // Identity before readiness: exe, cmdline and environ are fixed from exec on.
      expected_identity want{opts_.exe, argv_, opts_.env};
      auto problems = check_process_identity(pid_, want);
      if (!problems.empty()) {
        check_alive("start-up");  // it exited at once (could not bind, say): say so, with its log
        throw case_error("server identity check failed:" + join_lines(problems));
      }
      wait_server_ready();
    }
    // Only now does the listening socket exist; it must be ours and only ours.
    check_listener();
  } catch (...) {
    stop();  // a fatal_error from here (port stuck) replaces the case's error: it ends the run
    throw;
  }
}

case_process::~case_process() {
  if (pid_ > 0 || pgid_ > 0 || !seen_.empty()) {
    try {
      stop();
    } catch (...) {
    }
  }
}

std::string case_process::who() const { return is_peer() ? "peer " + opts_.name : "server"; }

void case_process::start() {
  if (is_peer()) {
    argv_ = {"/bin/sh", "-c", opts_.command};
  } else {
    argv_.push_back(opts_.exe);
    for (const auto& a : opts_.args) argv_.push_back(a);
  }
  spawn_spec sp;
  sp.exe = is_peer() ? "/bin/sh" : opts_.exe;
  sp.argv = argv_;
  sp.env = child_environment(opts_.env);
  sp.output_path = opts_.log_path;
  sp.cpus = opts_.cpus;
  { std::ofstream truncate(opts_.log_path, std::ios::trunc); }
  try {
    pid_ = spawn_process(sp);  // in a process group of its own: pgid == pid_
  } catch (const std::exception& e) {
    throw case_error(is_peer() ? who() + ": " + e.what() : std::string(e.what()));
  }
  // knit-server is stopped by PID alone; a peer's group is how its tree is found and ended.
  if (is_peer()) pgid_ = pid_;
}

void case_process::check_listener() {
  if (!is_peer()) {
    auto problems = check_socket_owner(pid_, opts_.port);
    if (!problems.empty()) throw case_error("server socket check failed:" + join_lines(problems));
    return;
  }
  // Only our tree may listen on the port: a stray server there would take our load.
  auto tree = process_tree(pid_);
  seen_.insert(seen_.end(), tree.begin(), tree.end());
  std::vector<pid_t> pids;
  for (const auto& p : tree) pids.push_back(p.pid);
  auto problems =
      check_socket_owner(pids, opts_.port,
                         who() + " (PID " + std::to_string(pid_) + " and the " +
                             std::to_string(pids.size() - 1) + " process(es) it started)");
  if (!problems.empty()) throw case_error(who() + ": socket check failed:" + join_lines(problems));
}

void case_process::check_alive(const char* phase) {
  if (pid_ <= 0) throw case_error(who() + " not running during " + phase);
  auto st = reap_nohang(pid_);
  if (!st) return;
  pid_t dead = pid_;
  pid_ = -1;  // reaped; whatever a peer started is still in seen_, for stop() to end
  if (is_peer())
    throw case_error(who() + " (PID " + std::to_string(dead) + ") exited during " + phase + " (" +
                     st->text() +
                     "); a peer must stay in the foreground (nginx: daemon off;); log: " +
                     file_tail(opts_.log_path));
  throw case_error("server PID " + std::to_string(dead) + " exited during " + phase + " (" +
                   st->text() + "); log: " + file_tail(opts_.log_path));
}

// knit-server's readiness: its "listening on" line, then a TCP connect.
void case_process::wait_server_ready() {
  auto t0 = std::chrono::steady_clock::now();
  bool announced = false;
  for (;;) {
    if (interrupted()) throw case_error("interrupted while waiting for the server");
    check_alive("start-up");
    if (!announced) {
      for (const auto& line : new_log_lines())
        if (line.rfind("listening on", 0) == 0) announced = true;
    }
    if (announced && tcp_connect_ok(opts_.host, opts_.port, 200)) return;
    if (since(t0) > opts_.ready_timeout_s)
      throw case_error(std::string("server not ready after ") +
                       seconds_text(opts_.ready_timeout_s) + " s (" +
                       (announced ? "printed 'listening on' but refuses connections"
                                  : "no 'listening on' line yet") +
                       "); log: " + file_tail(opts_.log_path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A peer's readiness: any server only promises to accept connections.
void case_process::wait_peer_ready() {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (interrupted()) throw case_error("interrupted while waiting for " + who());
    check_alive("start-up");
    // Remember the tree as it grows, so that stop() finds even a child that left the group.
    for (const auto& p : process_tree(pid_))
      if (std::find(seen_.begin(), seen_.end(), p) == seen_.end()) seen_.push_back(p);
    if (tcp_connect_ok(opts_.host, opts_.port, 200)) return;
    if (since(t0) > opts_.ready_timeout_s)
      throw case_error(who() + ": nothing accepted connections on " + opts_.host + ":" +
                       std::to_string(opts_.port) + " within " +
                       seconds_text(opts_.ready_timeout_s) + " s of starting `" + opts_.command +
                       "`; log: " + file_tail(opts_.log_path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> case_process::new_log_lines() {
  std::vector<std::string> lines;
  std::ifstream in(opts_.log_path, std::ios::binary);
  if (!in) return lines;
  in.seekg(log_offset_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  log_offset_ += static_cast<long>(chunk.size());
  partial_ += chunk;
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    lines.push_back(partial_.substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  return lines;
}

std::optional<server_stats> case_process::request_stats(double timeout_s) {
  // Never signalled: SIGUSR1 means something else to other servers (nginx reopens its logs).
  if (is_peer()) return std::nullopt;
  check_alive("stats request");
  new_log_lines();  // skip whatever was printed before our signal
  ::kill(pid_, SIGUSR1);
  auto t0 = std::chrono::steady_clock::now();
  while (since(t0) < timeout_s) {
    for (const auto& line : new_log_lines())
      if (auto s = parse_stats_line(line)) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::string case_process::stop() { return is_peer() ? stop_tree() : stop_server(); }

std::string case_process::stop_server() {
  if (pid_ <= 0) return "";
  pid_t pid = pid_;
  pid_ = -1;
  bool killed = false;
  std::string note;
  try {
    exit_status st = stop_process(pid, opts_.stop_grace_s, &killed);
    if (killed)
      note = "server ignored SIGTERM for " + seconds_text(opts_.stop_grace_s) + " s; sent SIGKILL";
    else if (!st.exited || st.code != 0)
      note = "server exited with " + st.text() + " after SIGTERM";
  } catch (const std::exception& e) {
    throw fatal_error(e.what());
  }
  // The next case's port check would catch a lingering listener too, but the cause
  // is clearer here, and a run with a stuck port cannot produce trustworthy rows.
  wait_port_free("after server PID " + std::to_string(pid) + " exited");
  return note;
}

std::string case_process::stop_tree() {
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
    return std::none_of(tree.begin(), tree.end(),
                        [&](const proc_entry& p) { return p.pid != root && still_running(p); });
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
  bool gone = false;
  if (opts_.root_stops_tree && root > 0) {
    ::kill(root, SIGTERM);
    gone = wait_gone(opts_.stop_grace_s);
  }
  if (!gone) signal_all(SIGTERM);
  if (!gone && !wait_gone(opts_.stop_grace_s)) {
    note = who() + " ignored SIGTERM for " + seconds_text(opts_.stop_grace_s) + " s; sent SIGKILL";
    signal_all(SIGKILL);
    if (!wait_gone(10.0))
      throw fatal_error(who() + ": processes of PID " + std::to_string(group) +
                        "'s tree survived SIGKILL for 10 s");
  } else if (root_status && (!root_status->exited || root_status->code != 0)) {
    // A shell killed by SIGTERM is the expected end of a peer that never exits on its own.
    if (!(root_status->signal == SIGTERM)) note = who() + " exited with " + root_status->text();
  }
  wait_port_free("after " + who() + " stopped");
  return note;
}

void case_process::wait_port_free(const std::string& after) {
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  while (!port_is_free(opts_.host, opts_.port, &why)) {
    if (since(t0) > opts_.port_free_timeout_s)
      throw fatal_error("port " + std::to_string(opts_.port) + " still busy " +
                        seconds_text(opts_.port_free_timeout_s) + " s " + after + ": " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace knit::bench
