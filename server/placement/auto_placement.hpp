// KNIT_MODE=auto: per heavy route, inline while its measured cost is small, else the knit pool.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>

#include <knit/asio.hpp>

#include "config.hpp"
#include "http/router.hpp"
#include "placement/heavy_job.hpp"
#include "placement/heavy_outcome.hpp"
#include "placement/offload_policy.hpp"
#include "placement/pool_placement.hpp"

namespace knit_server {

// The pool placement plus one offload_policy per heavy route (offload_policy.hpp decides and
// samples; this class only routes the call). A call run inline pays no hand-off and has no
// queue, so admission control applies only to the calls that go to the pool. Host thread
// only, like pool_placement.
class auto_placement {
 public:
  // `ledger`, `host` and `cfg` must outlive the placement.
  auto_placement(heavy_ledger& ledger, const server_config& cfg, knit::asio_host& host,
                 const offload_options& options) noexcept
      : cfg_(cfg),
        pool_(ledger, cfg, host),
        policies_{offload_policy(options.inline_below_us),
                  offload_policy(options.inline_below_us)} {}

  auto_placement(const auto_placement&) = delete;
  auto_placement& operator=(const auto_placement&) = delete;

  // As pool_placement::start for a route whose policy says "pool"; otherwise runs the call
  // here and returns its outcome, as inline_placement does.
  template <class Done>
  std::optional<heavy_outcome> start(route r, std::string&& body, Done&& done);

  // The per-route state for knit-stats:
  //   {"ssr":{"inline":N,"pooled":N,"avg_ns":N},"jwt":{...}}
  // (inline/pooled: calls started on each path; avg_ns: the running average of the
  // measured cost, 0 before the first sample).
  std::string stats_json() const;

 private:
  offload_policy& policy(route r) noexcept { return policies_[r == route::ssr ? 0 : 1]; }
  const offload_policy& policy(route r) const noexcept {
    return policies_[r == route::ssr ? 0 : 1];
  }

  const server_config& cfg_;
  pool_placement pool_;
  std::array<offload_policy, 2> policies_;  // /ssr, /jwt
};

template <class Done>
std::optional<heavy_outcome> auto_placement::start(route r, std::string&& body, Done&& done) {
  // Ask where the call goes before counting it: a call refused by admission is not started.
  if (policy(r).pooled()) {
    if (auto refused = pool_.admit()) return refused;
  }
  const offload_policy::decision choice = policy(r).next();
  heavy_job job = heavy_job_for(cfg_, r);
  job.measure = choice.measure;

  if (!choice.pooled) {
    // Inline: a price worth paying only for a call cheaper than a submit.
    knit::result<heavy_output> out = run_heavy_job(job, std::move(body));
    if (choice.measure) policy(r).record(out.ok() ? out.value().cpu_ns : 0);
    return heavy_outcome::of(r, std::move(out));
  }
  // The worker's CPU time for the call, fed to the route's average on the host thread.
  return pool_.submit(job, std::move(body), std::forward<Done>(done),
                      [this, r, measured = choice.measure](const heavy_output& out) noexcept {
                        if (measured) policy(r).record(out.cpu_ns);
                      });
}

}  // namespace knit_server
