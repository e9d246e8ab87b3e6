// Where the heavy routes (/ssr, /jwt) run: one placement, chosen from KNIT_MODE at start-up.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "http/router.hpp"
#include "placement/asio_pool_placement.hpp"
#include "placement/auto_placement.hpp"
#include "placement/heavy_outcome.hpp"
#include "placement/inline_placement.hpp"
#include "placement/pool_placement.hpp"

namespace knit_server {

// A request's body goes session -> placement -> worker -> placement -> session:
//
//   start(route, body, done) --(known at once: inline, refused, not handed over)-->
//                               returns the heavy_outcome
//                            --(accepted)--> the job runs on a knit worker or an asio
//                               thread --> done(heavy_outcome&&) on the session's thread
//
// Either way the session gets one heavy_outcome (heavy_outcome.hpp: ok, refused, failed,
// stuck, ...), with its status, type and body, and writes it as it is (session::respond);
// it knows nothing else of where the work ran. The placement builds the outcome where it
// knows what happened, and notes the refusals and stuck calls in ledger(). Each placement is
// its own type in its own file:
//   inline_placement     inline, multi: on the thread that read the request;
//   pool_placement       pooled: on a knit pool worker, behind admission control;
//   auto_placement       auto: per route, inline or pool_placement, by measured cost;
//   asio_pool_placement  asio: on a boost::asio::thread_pool, the result posted back.
// A variant rather than a virtual base: start() takes the session's handler as it is, so a
// call allocates nothing for it (a std::function could not hold it in place).
class heavy_placement {
 public:
  // Constructs the placement P from `args` (the placement's own constructor), passing it
  // the ledger first when P takes one (pool_placement and auto_placement: they refuse and
  // give up on calls; inline and asio never do).
  template <class P, class... Args>
  requires std::is_constructible_v<P, heavy_ledger&, Args&&...>
  explicit heavy_placement(std::in_place_type_t<P> which, Args&&... args)
      : placement_(which, ledger_, std::forward<Args>(args)...) {}
  template <class P, class... Args>
  requires(!std::is_constructible_v<P, heavy_ledger&, Args&&...>) explicit heavy_placement(
      std::in_place_type_t<P> which, Args&&... args)
      : placement_(which, std::forward<Args>(args)...) {}

  heavy_placement(const heavy_placement&) = delete;
  heavy_placement& operator=(const heavy_placement&) = delete;

  // Runs route `r` (ssr or jwt) on `body`, which is moved into the job. Returns the outcome
  // when it is known before start() returns (then `done` is never called), or calls
  // `done(heavy_outcome&&)` exactly once later, on the session's thread. `done` must not
  // throw (the pool would terminate): catch inside it.
  template <class Done>
  std::optional<heavy_outcome> start(route r, std::string&& body, Done&& done) {
    return std::visit(
        [&](auto& placement) {
          return placement.start(r, std::move(body), std::forward<Done>(done));
        },
        placement_);
  }

  // A call refused before it reached the placement (the session's write budget), noted in
  // the ledger like the placement's own refusals.
  heavy_outcome refuse(refusal_reason why) noexcept {
    heavy_outcome out = heavy_outcome::refused(why);
    ledger_.note(out);
    return out;
  }

  // The refusals and stuck calls of this event loop's heavy calls (knit-stats, /metrics,
  // /readyz).
  heavy_ledger& ledger() noexcept { return ledger_; }
  const heavy_ledger& ledger() const noexcept { return ledger_; }

  // Auto mode's knit-stats field (auto_placement::stats_json); nullopt in the other modes.
  std::optional<std::string> auto_json() const {
    if (const auto* p = std::get_if<auto_placement>(&placement_)) return p->stats_json();
    return std::nullopt;
  }

 private:
  heavy_ledger ledger_;  // before placement_, which holds a reference to it
  std::variant<inline_placement, pool_placement, auto_placement, asio_pool_placement> placement_;
};

}  // namespace knit_server
