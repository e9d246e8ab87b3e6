// The standby list: process workers (worker_box, starter.hpp) that knit::process_workers
// started for a pool and that none of its hosts' rings has taken yet, process-wide. A ring
// claiming its boxes at its first process call takes its pool's first (their children
// already handshaken), else makes new ones with the pool's process options.
#pragma once

#include <memory>

#include "knit/process_options.hpp"
#include "process/starter.hpp"

namespace knit::detail {

// A worker for one of a ring's children: the oldest in the standby list started for the
// pool `pool_key` (&pool.options()), else a new one (batch 0) with `options`, whose
// children run on `cpus`.
std::shared_ptr<worker_box> claim_worker(const void* pool_key, const process_options& options,
                                         const cpu_set_t& cpus);

}  // namespace knit::detail
