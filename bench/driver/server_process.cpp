// One knit-server for one case: start it on a free port, prove it is the process we
// meant, wait until it serves, ask it for stats, and stop it by PID.
#include "driver/server_process.hpp"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "driver/identity.hpp"
#include "driver/interrupt.hpp"
#include "driver/load_run.hpp"
#include "driver/numfmt.hpp"
#include "driver/port.hpp"
#include "driver/spawn.hpp"

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

server_process::server_process(server_options opts) : opts_(std::move(opts)) {
  std::string why;
  if (!port_is_free(opts_.host, opts_.port, &why))
    throw case_error("port " + std::to_string(opts_.port) + " is not free (" + why +
                    "); refusing to start, so that a stale server is never measured");

  argv_.push_back(opts_.exe);
  for (const auto& a : opts_.args) argv_.push_back(a);
  spawn_spec sp;
  sp.exe = opts_.exe;
  sp.argv = argv_;
  sp.env = child_environment(opts_.env);
  sp.output_path = opts_.log_path;
  sp.cpus = opts_.cpus;
  {
    std::ofstream truncate(opts_.log_path, std::ios::trunc);
  }
  try {
    pid_ = spawn_process(sp);
  } catch (const std::exception& e) {
    throw case_error(e.what());
  }

  try {
    // Identity before readiness: exe, cmdline and environ are fixed from exec on.
    expected_identity want{opts_.exe, argv_, opts_.env};
    auto problems = check_process_identity(pid_, want);
    if (!problems.empty()) {
      check_alive("start-up");  // it exited at once (could not bind, say): report that, with its log
      throw case_error("server identity check failed:" + join_lines(problems));
    }
    wait_ready();
    // Only now does the listening socket exist; it must be ours and only ours.
    problems = check_socket_owner(pid_, opts_.port);
    if (!problems.empty()) throw case_error("server socket check failed:" + join_lines(problems));
  } catch (...) {
    stop();  // a fatal_error from here (port stuck) replaces the case's error: it ends the run
    throw;
  }
}

server_process::~server_process() {
  if (pid_ > 0) {
    try {
      stop();
    } catch (...) {
    }
  }
}

void server_process::check_alive(const char* phase) {
  if (pid_ <= 0) throw case_error(std::string("server not running during ") + phase);
  if (auto st = reap_nohang(pid_)) {
    pid_t dead = pid_;
    pid_ = -1;
    throw case_error("server PID " + std::to_string(dead) + " exited during " + phase + " (" + st->text() +
                    "); log: " + file_tail(opts_.log_path));
  }
}

void server_process::wait_ready() {
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
      throw case_error(std::string("server not ready after ") + seconds_text(opts_.ready_timeout_s) + " s (" +
                      (announced ? "printed 'listening on' but refuses connections"
                                 : "no 'listening on' line yet") +
                      "); log: " + file_tail(opts_.log_path));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> server_process::new_log_lines() {
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

std::optional<server_stats> server_process::request_stats(double timeout_s) {
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

std::string server_process::stop() {
  if (pid_ <= 0) return "";
  pid_t pid = pid_;
  pid_ = -1;
  bool killed = false;
  std::string note;
  try {
    exit_status st = stop_process(pid, opts_.stop_grace_s, &killed);
    if (killed) note = "server ignored SIGTERM for " + seconds_text(opts_.stop_grace_s) + " s; sent SIGKILL";
    else if (!st.exited || st.code != 0) note = "server exited with " + st.text() + " after SIGTERM";
  } catch (const std::exception& e) {
    throw fatal_error(e.what());
  }
  // The next case's port check would catch a lingering listener too, but the cause
  // is clearer here, and a run with a stuck port cannot produce trustworthy rows.
  auto t0 = std::chrono::steady_clock::now();
  std::string why;
  while (!port_is_free(opts_.host, opts_.port, &why)) {
    if (since(t0) > opts_.port_free_timeout_s)
      throw fatal_error("port " + std::to_string(opts_.port) + " still busy " + seconds_text(opts_.port_free_timeout_s) +
                       " s after server PID " + std::to_string(pid) + " exited: " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return note;
}

}  // namespace knit::bench
