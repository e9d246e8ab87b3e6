// spin_gate: counting the CPUs the host and its workers may use (the rule: spin_gate.hpp).
#include "spin_gate.hpp"

#include <algorithm>
#include <thread>

#include <sched.h>

namespace knit::detail {

unsigned usable_cpu_count(std::span<const int> host_cpus, std::span<const int> worker_cpus,
                          unsigned threads) {
  std::vector<int> all(host_cpus.begin(), host_cpus.end());
  if (!worker_cpus.empty()) {
    const std::size_t pinned = std::min<std::size_t>(threads, worker_cpus.size());
    all.insert(all.end(), worker_cpus.begin(),
               worker_cpus.begin() + static_cast<std::ptrdiff_t>(pinned));
  }
  std::sort(all.begin(), all.end());
  return static_cast<unsigned>(std::unique(all.begin(), all.end()) - all.begin());
}

std::vector<int> calling_thread_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  // Fails only past CPU_SETSIZE (1024) CPUs; the caller then falls back to the online count.
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

bool host_leaves_a_cpu_for_spinning(const pool_options& options) {
  const std::vector<int> host = calling_thread_cpus();
  unsigned usable = usable_cpu_count(host, options.worker_cpus, options.threads);
  if (host.empty()) usable = std::max(usable, std::thread::hardware_concurrency());
  return spin_has_own_cpu(usable, options.threads);
}

}  // namespace knit::detail
