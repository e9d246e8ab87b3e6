// The standby list: process workers (worker_box, starter.hpp) that no worker thread holds,
// process-wide. knit::process_workers puts the workers it started there; a thread's first
// process call takes one (or makes a new one when the list is empty); a channel whose call
// was stuck puts its worker back (channel.cpp), its replacement child started, because
// the pool may retire that thread and start another, whose first call then finds the
// started child instead of spawning one.
#pragma once

#include <memory>

#include "process/starter.hpp"

namespace knit::detail {

// A worker for a thread's first process task: the oldest in the standby list, else a new
// one (batch 0).
std::shared_ptr<worker_box> claim_worker();

// Announces the kill of `box`'s child `killed_id` (box->replace, which schedules its
// replacement) and puts `box` at the end of the standby list, for the next thread that
// needs a worker, both under the list's lock (lock order: list, box, starter): whoever sees
// the replacement start finds the box in the list, whoever claims the box finds the
// replacement scheduled. Only a box of a process_workers (batch != 0), which ends it at its
// own end if no thread has taken it by then; a box of batch 0 has no owner to end it, so it
// stays with its channel. A box whose process_workers has ended already is ended here
// (abandon: no replacement).
void return_worker(std::shared_ptr<worker_box> box, std::uint64_t killed_id);

}  // namespace knit::detail
