// KNIT_MODE=pooled: the heavy routes on a knit pool worker, behind admission control.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <knit/asio.hpp>
#include <knit/knit.hpp>

#include "config.hpp"
#include "http/router.hpp"
#include "placement/admission.hpp"
#include "placement/heavy_job.hpp"
#include "placement/heavy_outcome.hpp"
#include "placement/heavy_wire.hpp"
#include "placement/held_handler_block.hpp"
#include "placement/process_isolation.hpp"
#include "placement/start_deadlines.hpp"
#include "telemetry/log_writer.hpp"

namespace knit_server {

// The reference server's pooled variant. A call is first put to admission control (a call
// that would wait too long for a worker is refused now, with 503 and Retry-After, rather
// than queued to answer late: admission.hpp), then submitted; the pool itself may refuse it
// too (its max_pending reached, or shutting down). An accepted call that no worker has started
// within KNIT_MAX_QUEUE_WAIT_MS is refused then (503, counted as queue_wait), whatever
// admission expected of it (start_deadlines.hpp: the estimate is blind to a cold server's
// first burst). The body string moves into the call
// record and from there into the job; the rendered body comes back by move inside the
// result. Nothing is copied either way. KNIT_ISOLATION=process: the same call through
// knit::submit_process, the job and the body as bytes to a worker process and back
// (process_isolation.hpp).
//
// Every outcome but ok is built here, from admission's verdict, the pool's refusal or the
// call's errc (heavy_outcome::of_error), and noted in `ledger` (refusals, stuck calls).
//
// Host thread only: every member is touched from the thread that created the pool (knit
// checks it), and the completions run there too, from the io_context.
class pool_placement {
 public:
  // `ledger`, `host` and `cfg` must outlive the placement (the job views the secret), and so
  // must `err` (may be null: then a crashed worker process is only counted, not logged).
  pool_placement(heavy_ledger& ledger, const server_config& cfg, knit::asio_host& host,
                 log_writer* err = nullptr) noexcept
      : ledger_(ledger),
        cfg_(cfg),
        host_(host),
        err_(err),
        admission_{cfg.max_queue_delay, cfg.max_queued},
        deadlines_(cfg.max_queue_wait()),
        deadline_timer_(host.context()) {}

  pool_placement(const pool_placement&) = delete;
  pool_placement& operator=(const pool_placement&) = delete;

  // Admits and submits route `r` on `body`. Either returns the outcome now (refused: 503;
  // failed: could not be handed over; then `done` is never called), or calls
  // `done(heavy_outcome&&)` later, on the host thread, exactly once. `done` must not throw
  // (the pool would terminate): catch inside it.
  template <class Done>
  std::optional<heavy_outcome> start(route r, std::string&& body, Done&& done) {
    if (auto refused = admit()) return refused;
    return submit(heavy_job_for(cfg_, r), std::move(body), std::forward<Done>(done),
                  [](const heavy_output&) noexcept {});
  }

  // The two halves of start(), for auto_placement, which decides between them whether the
  // call goes to the pool at all.
  //
  // Admission control's verdict on one more call now: nullopt = accept, or the refusal
  // (noted in the ledger).
  std::optional<heavy_outcome> admit() noexcept;

  // Submits `job` without asking admission control. `on_value(const heavy_output&)` sees a
  // worker's result on the host thread before `done` does (not a call without a value).
  template <class Done, class OnValue>
  std::optional<heavy_outcome> submit(const heavy_job& job, std::string&& body, Done&& done,
                                      OnValue on_value);

  // The pool's load as admission control sees it (calls pending, workers, the pool's
  // estimate of one call's run time, the measured service interval).
  queue_state queue() const noexcept;

 private:
  // A refusal for `why`, noted in the ledger.
  heavy_outcome refuse(refusal_reason why) noexcept;

  // A finished call's outcome (heavy_outcome::of), noted in the ledger (a stuck call).
  heavy_outcome finish(route r, knit::result<heavy_output>&& result) noexcept;

  // A process call's result as a heavy call's: the answer bytes decoded, or the error (an
  // answer that does not decode counts as errc::worker_crashed: the worker wrote garbage).
  static knit::result<heavy_output> heavy_result_of(knit::result<std::string>&& r);

  // Feeds one completion to meter_ (from the completion handler).
  void on_completion() noexcept;

  // Whether calls get a queue-wait deadline (KNIT_MAX_QUEUE_WAIT_MS > 0).
  bool deadlines_on() const noexcept { return cfg_.max_queue_wait().count() > 0; }

  // Whether a call submitted now finds at least `threads` calls ahead of it: no worker free.
  bool queue_behind_busy_workers() const noexcept {
    const knit::pool& pool = host_.get_pool();
    return pool.pending() >= pool.options().threads;
  }

  // Puts the call `id` just submitted under its deadline (ticket: its deadlines_ entry, added
  // before the submit) and keeps the timer on.
  void track(knit::call_id id, std::uint64_t ticket) noexcept;

  // Keeps deadline_timer_ on the earliest deadline while calls are tracked. The timer is
  // not cancelled when the last call completes (one wake per limit at most, instead of a
  // re-arm per call): it then finds nothing due and stays idle.
  void arm_deadline_timer() noexcept;

  // The timer fired: refuses every call due that has not started (knit::pool::cancel), its
  // handler answering 503 (queue_wait) from inside the cancel.
  void on_deadline();

  // KNIT_ISOLATION=process: one stderr line for a call whose worker process crashed or could
  // not start, with what knit says of it (the task, the pid, the signal or exit code). At
  // most one line per crash, and a crash costs a respawn (milliseconds), so a crash storm
  // is bounded; log_writer drops what it cannot write.
  void log_process_failure(const knit::result<std::string>& r) const;

  heavy_ledger& ledger_;
  const server_config& cfg_;
  knit::asio_host& host_;
  log_writer* err_;
  admission_policy admission_;
  service_meter meter_;        // completions of the pool's calls, for queue().service_interval
  start_deadlines deadlines_;  // the calls not known to be started or complete
  boost::asio::steady_timer deadline_timer_;  // on deadlines_.next_due() while armed
  bool timer_armed_ = false;
  bool shedding_ = false;  // on_deadline's cancel is running: its errc::cancelled is a refusal
};

template <class Done, class OnValue>
std::optional<heavy_outcome> pool_placement::submit(const heavy_job& job, std::string&& body,
                                                    Done&& done, OnValue on_value) {
  // `this` outlives every handler: main() shuts the pool down (every handler called) before
  // the placement goes out of scope, which the sessions' handlers need of the server too.
  // One completion for both isolations: the call's result, as a heavy_output or an error.
  // The block it holds keeps the host's Asio handler-memory cache as balanced as in asio mode
  // (held_handler_block.hpp: measured at ~500 host instructions per request, docs/host-path.md).
  // Only a call that finds every worker busy waits in a queue; one that finds a worker free
  // starts when that worker wakes, which the deadline is not about (on a loaded machine a
  // wake can take longer than a short KNIT_MAX_QUEUE_MS), and costs nothing here.
  const bool timed = deadlines_on() && queue_behind_busy_workers();
  std::uint64_t ticket = 0;
  if (timed) {
    try {
      ticket = deadlines_.add(0, start_deadlines::clock::now());  // named after the submit
    } catch (const std::exception&) {
      return heavy_outcome::failed();  // out of memory, as a submit that cannot allocate
    }
  }
  auto complete = [this, on_value, r = job.which, timed, ticket, block = held_handler_block(),
                   done = std::forward<Done>(done)](knit::result<heavy_output> result) mutable {
    block.release();  // for the response's write (held_handler_block.hpp)
    if (timed) deadlines_.done(ticket);
    if (shedding_ && result.error() == knit::errc::cancelled) {
      // Not started by its deadline (on_deadline): a refusal, and no completion for the
      // meter (no worker time was spent on it).
      done(refuse(refusal_reason::queue_wait));
      return;
    }
    on_completion();
    if (result.ok()) on_value(result.value());
    done(finish(r, std::move(result)));
  };
  std::error_code ec;
  knit::call_id id = 0;
  try {
    if (cfg_.worker_isolation == isolation::process) {
      // The job and the body cross to the worker process as bytes (heavy_wire.hpp), and the
      // answer comes back the same way: two copies each way that thread mode does not make.
      ec = knit::submit_process(
          host_, std::string(kHeavyProcessTask), encode_heavy_request(job, body),
          [this, complete = std::move(complete)](knit::result<std::string> r) mutable {
            if (!r.ok()) log_process_failure(r);
            complete(heavy_result_of(std::move(r)));
          },
          knit::call_options{}, &id);
    } else {
      // The job only borrows the body; this wrapper owns it, so the worker frees it when the
      // job returns (as in asio mode), not the host when it destroys the call record.
      auto owning_job = [job](std::string owned) { return job(std::move(owned)); };
      ec =
          host_.submit(owning_job, std::move(body), std::move(complete), knit::call_options{}, &id);
    }
  } catch (const std::exception&) {
    // submit() could not allocate the call: 500 (not counted as a refusal), the server
    // carries on.
    if (timed) deadlines_.done(ticket);
    return heavy_outcome::failed();
  }
  // The pool refused the call: say so at once instead of queueing without bound.
  if (ec) {
    if (timed) deadlines_.done(ticket);
    return refuse(refusal_reason::pool_full);
  }
  if (timed) track(id, ticket);
  return std::nullopt;
}

}  // namespace knit_server
