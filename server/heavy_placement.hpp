// Where the heavy routes (/ssr, /jwt) run: one placement, chosen from KNIT_MODE at start-up.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "asio_pool_placement.hpp"
#include "auto_placement.hpp"
#include "heavy_refusal.hpp"
#include "inline_placement.hpp"
#include "pool_placement.hpp"
#include "router.hpp"

namespace knit_server {

// A request's body goes session -> placement -> worker -> placement -> session:
//
//   start(route, body, done) --(refused: admission, pool full)--> heavy_refusal, at once
//                            --(accepted)--> the job runs: inline, on a knit worker, or on
//                               an asio thread --> done(heavy_output&&) on the session's
//                               thread (inline: before start() returns)
//
// The session turns a refusal into its answer (503 + Retry-After, or 500) and knows nothing
// else of where the work ran. Each placement is its own type in its own file:
//   inline_placement     inline, multi: on the thread that read the request;
//   pool_placement       pooled: on a knit pool worker, behind admission control;
//   auto_placement       auto: per route, inline or pool_placement, by measured cost;
//   asio_pool_placement  asio: on a boost::asio::thread_pool, the result posted back.
// A variant rather than a virtual base: start() takes the session's handler as it is, so a
// call allocates nothing for it (a std::function could not hold it in place).
class heavy_placement {
 public:
  // Constructs the placement P from `args` (the placement's own constructor).
  template <class P, class... Args>
  explicit heavy_placement(std::in_place_type_t<P> which, Args&&... args)
      : placement_(which, std::forward<Args>(args)...) {}

  heavy_placement(const heavy_placement&) = delete;
  heavy_placement& operator=(const heavy_placement&) = delete;

  // Runs route `r` (ssr or jwt) on `body`, which is moved into the job. Returns the refusal
  // (then `done` is never called), or calls `done(heavy_output&&)` exactly once on the
  // session's thread. `done` must not throw (the pool would terminate): catch inside it.
  template <class Done>
  std::optional<heavy_refusal> start(route r, std::string&& body, Done&& done) {
    return std::visit(
        [&](auto& placement) {
          return placement.start(r, std::move(body), std::forward<Done>(done));
        },
        placement_);
  }

  // Auto mode's knit-stats field (auto_placement::stats_json); nullopt in the other modes.
  std::optional<std::string> auto_json() const {
    if (const auto* p = std::get_if<auto_placement>(&placement_)) return p->stats_json();
    return std::nullopt;
  }

 private:
  std::variant<inline_placement, pool_placement, auto_placement, asio_pool_placement> placement_;
};

}  // namespace knit_server
