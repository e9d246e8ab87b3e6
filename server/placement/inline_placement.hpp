// KNIT_MODE=inline and multi: the heavy routes run on the thread that read the request.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "config.hpp"
#include "http/router.hpp"
#include "placement/heavy_job.hpp"
#include "placement/heavy_outcome.hpp"

namespace knit_server {

// The reference server's inline variant: the host thread does the work itself, and every
// other connection on that thread waits until it is done. That head-of-line blocking is what
// the pool exists to remove. In multi mode each io thread does the same for its own
// connections; the placement keeps no state, so any thread may call start() at any time.
class inline_placement {
 public:
  // `cfg` must outlive the placement (the job views the secret).
  explicit inline_placement(const server_config& cfg) noexcept : cfg_(cfg) {}

  inline_placement(const inline_placement&) = delete;
  inline_placement& operator=(const inline_placement&) = delete;

  // Runs route `r` on `body` here and returns its outcome (ok, or failed if the route
  // threw); `done` is never called. Never refuses: there is no queue to be full.
  template <class Done>
  std::optional<heavy_outcome> start(route r, std::string&& body, Done&& /*done*/) {
    return heavy_outcome::of(r, run_heavy_job(heavy_job_for(cfg_, r), std::move(body)));
  }

 private:
  const server_config& cfg_;
};

}  // namespace knit_server
