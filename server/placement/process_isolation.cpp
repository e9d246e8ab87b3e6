// The heavy call as a process task and the process options (process_isolation.hpp).
#include "placement/process_isolation.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

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

knit::process_options heavy_process_options() {
  knit::process_options options;
  // /ssr writes the name twice (title, h1) and the bio once, each byte escaped to at most 6
  // bytes ("&quot;", "&#x27;"), around a 2 KiB page: under 6 x kBodyLimit x 2 + 64 KiB.
  constexpr std::size_t kLargestAnswer = 12 * server_config::kBodyLimit + 64 * 1024;
  options.arena_bytes = std::max<std::size_t>(options.arena_bytes, kLargestAnswer);
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
