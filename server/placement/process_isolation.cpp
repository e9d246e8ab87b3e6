// The heavy call as a process task and the process options (process_isolation.hpp).
#include "placement/process_isolation.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "config.hpp"
#include "placement/heavy_wire.hpp"

namespace knit_server {

void register_heavy_process_task() {
  knit::register_process_task(std::string(kHeavyProcessTask), [](std::string_view bytes) {
    std::optional<heavy_request> request = decode_heavy_request(bytes);
    // Only the host encodes requests; a malformed one is a bug, answered as a failed task.
    if (!request) throw std::invalid_argument("knit-server: malformed heavy request");
    // The job takes its body by value; this copy is the one the thread mode's move saves. A
    // job that throws throws here too: the host gets errc::task_failed, as in thread mode.
    return encode_heavy_output(request->job(std::string(request->body)));
  });
}

void test_hook_worker_start(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "--knit-process-worker") return;
  if (const char* ms = std::getenv("KNIT_TEST_WORKER_START_DELAY_MS")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
  }
  if (const char* code = std::getenv("KNIT_TEST_WORKER_EXIT")) ::_exit(std::atoi(code));
}

namespace {

// An on/off environment variable: "1" sets `value`, "0" clears it, unset or empty leaves
// it; anything else is a config_error naming the variable and the value.
void read_switch(const char* name, bool& value) {
  const char* set = std::getenv(name);
  if (!set || !*set) return;
  const std::string text = set;
  if (text == "1") {
    value = true;
  } else if (text == "0") {
    value = false;
  } else {
    throw knit::config_error(std::string(name) + " must be 0 or 1, not '" + text + "'");
  }
}

}  // namespace

knit::process_options heavy_process_options() {
  knit::process_options options;
  // /ssr writes the name twice (title, h1) and the bio once, each byte escaped to at most 6
  // bytes ("&quot;", "&#x27;"), around a 2 KiB page: under 6 x kBodyLimit x 2 + 64 KiB.
  constexpr std::size_t kLargestAnswer = 12 * server_config::kBodyLimit + 64 * 1024;
  options.arena_bytes = std::max<std::size_t>(options.arena_bytes, kLargestAnswer);
  // The sandbox, on unless KNIT_WORKER_SANDBOX=off; the memory limit, KNIT_WORKER_MEMORY_MB
  // (default 1024, 0 = none), with the sandbox or without.
  const char* sandbox = std::getenv("KNIT_WORKER_SANDBOX");
  const std::string mode = sandbox ? sandbox : "strict";
  if (mode == "strict") {
    options.sandbox = knit::process_sandbox::strict;
  } else if (mode == "off") {
    options.sandbox = knit::process_sandbox::off;
  } else {
    throw knit::config_error("KNIT_WORKER_SANDBOX must be strict or off, not '" + mode + "'");
  }
  // Removed with the second process path: a setting for it is refused, not ignored, so a
  // configuration written for it says so at start-up.
  if (std::getenv("KNIT_PROCESS_HOST_RING")) {
    throw knit::config_error(
        "KNIT_PROCESS_HOST_RING was removed: every loop calls its worker processes through "
        "their shared mappings (the only process path); unset it");
  }
  // A spare worker process per worker, up and idle, that replaces a crashed or killed one
  // without a spawn on the way to the next answer (process_options::spare_child):
  // KNIT_WORKER_SPARE=0|1, default 1. Measured (bench/results/process-recovery-spare): kill
  // -> first answer from the replacement 2.5-2.8 ms median with it, 5.0-5.4 without, and
  // 2.2-2.4 against 15.1 with each start slowed by 10 ms; it costs an idle process per
  // worker that has taken its child, about 2 MiB of memory of its own (PSS; RSS 6.6 MiB,
  // the rest the binary's pages it shares), no CPU.
  options.spare_child = true;
  read_switch("KNIT_WORKER_SPARE", options.spare_child);
  // How many calls a host may have in one worker process at once (process_options::lanes):
  // KNIT_PROCESS_LANES=1..32, default 32. Why so deep: on a CPU the event loop shares with
  // its worker process, the child is given CPU only while it has calls, and it gets new
  // ones only at the loop's next drain, after its batch of socket events; a thread worker
  // takes from the whole queue. Measured (bench/results/process-lanes): saturating heavy
  // throughput on one CPU rose from 0.43x thread mode's at 1 lane to 0.97x at 32. What it
  // costs: a slow call holds up to 31 others behind it in its child, which the queue-wait
  // deadline (KNIT_MAX_QUEUE_WAIT_MS) still gives up on (a call behind is still queued), and
  // which the ring moves to an idle worker process;
  // and address space, 32 x 2 arenas per child (memory only for the pages calls write).
  options.lanes = 32;
  if (const char* lanes = std::getenv("KNIT_PROCESS_LANES")) {
    const std::string text = lanes;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1 ||
        value > 32) {
      throw knit::config_error("KNIT_PROCESS_LANES must be 1 .. 32, not '" + text + "'");
    }
    options.lanes = value;
  }
  std::size_t megabytes = 1024;
  if (const char* mb = std::getenv("KNIT_WORKER_MEMORY_MB")) {
    const std::string text = mb;
    std::size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size() || value > (std::size_t{1} << 20)) {
      throw knit::config_error("KNIT_WORKER_MEMORY_MB must be 0 .. 1048576, not '" + text + "'");
    }
    megabytes = value;
  }
  options.memory_limit = megabytes << 20;
  return options;
}

worker_process_figures worker_figures() noexcept {
  const knit::process_stats p = knit::current_process_stats();
  worker_process_figures w;
  w.crashed = p.crashes;
  w.respawned = p.respawned;
  w.killed = p.killed;
  w.live = p.children_live;
  w.degraded = p.degraded_workers;
  w.sandbox_kills = p.sandbox_kills;
  w.memory_kills = p.memory_limit_kills;
  w.resent = p.calls_resent;
  w.moved = p.calls_moved;
  w.protocol_kills = p.protocol_kills;
  return w;
}

}  // namespace knit_server
