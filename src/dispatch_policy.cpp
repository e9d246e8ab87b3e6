// dispatch_policy: the rule in dispatch_policy.hpp, applied to one set of snapshots.
#include "dispatch_policy.hpp"

namespace knit::detail {

dispatch_choice choose_worker(std::span<const worker_snapshot> workers,
                              const dispatch_inputs& inputs) noexcept {
  const unsigned n = static_cast<unsigned>(workers.size());
  int behind = -1, parked = -1, shortest = -1;
  std::int64_t best_wait = inputs.wake_cost_ns;
  std::size_t shortest_depth = ~std::size_t{0};
  for (unsigned k = 0; k < n; ++k) {
    const unsigned i = (inputs.start + k) % n;
    const worker_snapshot& w = workers[i];
    if (!reads_state(w)) continue;  // retired, or its ring is full
    if (ends_scan(w)) return {static_cast<int>(i), dispatch_rule::spinning_idle};
    if (w.state == worker_state::parked) {
      if (parked < 0 || i < static_cast<unsigned>(parked)) parked = static_cast<int>(i);
    } else if (best_wait > 0) {
      std::int64_t left = 0;  // between calls: it claims ours next
      bool known = true;
      if (w.call_started_ns != 0) {
        const std::int64_t elapsed = inputs.now_ns - w.call_started_ns;
        known = elapsed < inputs.call_ns_estimate;
        left = inputs.call_ns_estimate - elapsed;
      }
      const std::int64_t wait = left + static_cast<std::int64_t>(w.depth) * inputs.call_ns_estimate;
      if (known && wait < best_wait) {
        best_wait = wait;
        behind = static_cast<int>(i);
      }
    }
    if (w.depth < shortest_depth) {
      shortest_depth = w.depth;
      shortest = static_cast<int>(i);
    }
  }
  if (behind >= 0) return {behind, dispatch_rule::sooner_than_wake};
  if (parked >= 0) return {parked, dispatch_rule::parked};
  if (shortest >= 0) return {shortest, dispatch_rule::shortest_ring};
  return {};
}

}  // namespace knit::detail
