// The host side of tests/hostile: pools built as a user's program would build them, calls
// with every wait bounded, the PASS/FAIL lines, and a watchdog that ends the program with a
// FAIL if a check (or the host inside it) hangs past its budget.
#pragma once

#include <knit/knit.hpp>
#include <knit/process.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace hostile {

using steady = std::chrono::steady_clock;

// One process call and what came of it.
struct call_record {
  std::string task;
  std::string input;
  std::error_code submit_error;  // set: submit refused it, no handler will run
  steady::time_point submitted;
  steady::time_point answered;
  // mutable: result::value() has no const overload, and a record is read through const
  // std::optional<knit::result<std::string>> result;.
  mutable std::optional<knit::result<std::string>> result;

  bool done() const { return submit_error || result.has_value(); }
  bool ok() const { return result && result->ok(); }
  bool ok_with(const std::string& answer) const { return ok() && result->value() == answer; }
  bool failed_with(knit::errc code) const { return result && result->error() == code; }
  // "ok 'answer'" or "<error>: <message>", cut to a readable length.
  std::string describe() const;
};

// A strict-sandboxed pool with its children up before traffic. Destroys the children first,
// then the pool (process_workers before pool, as the header asks).
class host {
 public:
  // Throws what the pool or process_workers throw (the check then FAILs).
  host(unsigned threads, unsigned lanes);
  ~host();
  host(const host&) = delete;
  host& operator=(const host&) = delete;

  // Submits and returns the call's record (stable: a deque). A call is given a stuck limit
  // (the host kills a child that holds it longer) so no call can hang the program.
  call_record& submit(std::string task, std::string input,
                      std::chrono::milliseconds stuck_after = std::chrono::seconds(5));
  // poll(completion_fd) + drain until done() or `bound` passed; returns done().
  bool wait(const std::function<bool()>& done, steady::duration bound);
  // Waits for `call`; false past `bound`.
  bool wait(const call_record& call, steady::duration bound);
  // Drains whatever comes for `period` (an idle host loop).
  void idle(steady::duration period);
  // One echo call: whether it answered its own input within `bound`; `why` otherwise.
  bool echo_ok(const std::string& input, steady::duration bound, std::string& why);

  knit::pool& pool() { return *pool_; }

 private:
  std::unique_ptr<knit::pool> pool_;
  std::unique_ptr<knit::process_workers> workers_;
  std::deque<call_record> calls_;
};

// The report: one line per check on stdout, flushed at once (the watchdog may end the
// program any moment after).
void pass(const std::string& name);
void fail(const std::string& name, const std::string& why);
// A note on stderr (the driver script keeps it; shown when a check fails).
void note(const std::string& name, const std::string& what);
// Prints "N passed, M failed"; returns the exit status (non-zero when M > 0).
int summary();

// The watchdog: a thread that, once `budget` has passed since begin_check(name), prints
// "FAIL name: ..." and the summary and _exits 1; and the same for the program as a whole
// past `program_budget` from start_watchdog.
void start_watchdog(steady::duration program_budget);
void begin_check(const std::string& name, steady::duration budget);

}  // namespace hostile
