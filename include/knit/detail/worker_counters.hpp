// worker_counters: the one list of a worker's counters. Every place that needs the names
// expands KNIT_WORKER_COUNTERS(X) with its own X(name, description): the public
// worker_stats fields (knit/stats.hpp), the workers' own counters with their snapshot and
// carry-over (src/pool_shared.hpp), and totals() and to_json() (src/stats.cpp). A counter
// added here appears in all of them, in this order (the order of worker_stats' fields and
// of the JSON keys). The description is the field's documentation; no code reads it.
#pragma once

// X(name, description): each a std::uint64_t that only grows, written by its worker alone.
#define KNIT_WORKER_COUNTERS(X)                                                         \
  X(calls_run, "Calls this worker executed (its own and stolen ones).")                 \
  X(calls_stolen, "Of calls_run, those taken from a peer's ring.")                      \
  X(calls_skipped, "Abandoned calls (cancelled, timed out) handed back unrun.")         \
  X(spin_hits, "Spin rounds that caught work before the budget ran out.")               \
  X(spins, "Spin rounds started.")                                                      \
  X(spins_skipped_shared_cpu,                                                           \
    "Idle periods not spun because a spinner would share the host's CPU (spin gate).")  \
  X(spins_skipped_after_misses,                                                         \
    "Idle periods not spun because recent spins caught nothing (spin gate's backoff).") \
  X(parks, "Futex waits entered.")                                                      \
  X(wakes_doorbell, "Parks ended by a doorbell (host or peer).")                        \
  X(wakes_timeout, "Parks ended by park_ms expiring.")                                  \
  X(peer_wakes, "FUTEX_WAKE syscalls this worker issued for a peer.")                   \
  X(completion_signals, "Eventfd writes to wake the host (coalesced: one per batch).")  \
  X(sched_failures,                                                                     \
    "Worker threads on this seat that could not apply worker_nice / "                   \
    "worker_sched.")
