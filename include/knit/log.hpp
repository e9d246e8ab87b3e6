// knit/log.hpp: where the library's own diagnostics go. The library writes nothing to
// stdout or stderr by itself: every line it has to say goes to one sink the program sets,
// stderr until it does.
#pragma once

#include <functional>
#include <string_view>

#include "knit/export.hpp"

namespace knit {

/// Receives one diagnostic line of the library's, without a trailing newline.
using log_sink = std::function<void(std::string_view line)>;

/// @brief Sends the library's diagnostics to `sink`; an empty sink restores the default.
///
/// The default writes each line and a newline to stderr (fd 2) in one write(2). A stderr that
/// took nothing for 100 ms is not waited for again until it can take a line: lines are then
/// dropped, and no thread of the library ever stalls on a stderr nobody reads.
///
/// What the library says, all of it through the sink:
///  - a pool destroyed past its stop_timeout, and what it abandoned;
///  - a worker thread that could not apply worker_cpus, worker_nice or worker_sched;
///  - a misuse it cannot survive, just before std::abort(): a host still attached 5 s past
///    the shutdown's deadline, a pool_host destroyed on another thread;
///  - a violated internal invariant (checked builds only), just before std::abort();
///  - every line a process worker writes to its stdout or stderr, prefixed
///    "knit-proc-<number> (pid <pid>): " and bounded (docs/process-workers.md). A worker
///    process's own last words before it exits (it reached no knit::worker_main, it could
///    not start) are written by that child to its stderr, a pipe to its host: they reach the
///    host's sink as one of its lines.
///
/// The sink is called on the thread where the line arises (a worker, a host, the process
/// workers' output thread, a destructor), and on several threads at once: it must be
/// thread-safe. It must not throw (a line whose sink threw is written to stderr instead)
/// and must not call set_log_sink. set_log_sink may be called on any thread at any time;
/// it returns once no call into the previous sink is under way, so whatever that sink
/// captured may be destroyed then.
KNIT_API void set_log_sink(log_sink sink);

}  // namespace knit
