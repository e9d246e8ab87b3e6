// The starter: one process-wide thread that starts worker processes off the request path and
// watches every live one, so that a worker's process is ready before a call needs it.
//
// Why a thread of its own:
//   - Eager start (knit::process_workers): N children are spawned and handshaken before the
//     caller goes on; the starter spawns them, so their PR_SET_PDEATHSIG follows a thread
//     that lives as long as the process (PDEATHSIG fires when the *spawning thread* ends).
//   - Replace at once: a child that dies (a crash during a call, a kill at a deadline, a
//     SIGKILL from outside while it idles) is replaced as soon as the starter sees it, after
//     the crash-loop backoff, not when the next call lands on its worker. The starter polls
//     a dup of every live child's pidfd for that, so an idle child's death is seen too, and
//     reaps the child at once (child_end.hpp): no zombie waits for its worker's next call.
//
// One worker_box per process worker (per child of a host's ring, or per worker started ahead
// by process_workers), shared by its ring and the starter, its state under its mutex. The
// ring owns the child it holds; the box holds a child only between the starter's start and
// the ring's try_take(), which with process_options::spare_child starts the next one at
// once: the box then holds a spare, handshaken, while the ring's child lives, and the
// ring's next try_take() after a death returns it without a wait.
//
//   ring                            starter
//   replace(id): first sighting of  on the pidfd of child `id` readable: replace(id).
//     child id's end -> schedule a  at a scheduled time: start the child (spawn, handshake),
//     start at the crash loop's       put it (or the failure) in the box, notify.
//     respawn time.
//   take(): waits for the started child or the failure.
//   abandon(): no more starts; waits out a start under way, ends a child not taken.
//
// Degraded (crash_loop.hpp) ends by itself: while a box is degraded the starter holds one
// re-evaluation of it, due when the crash loop's window would hold fewer than K crashes
// (crash_loop::clears_at); it clears the flag then, or schedules the next. Without it a worker
// whose children crashed while idle would stay degraded (and /readyz "degraded: workers
// crash-looping") until its next crash or call, which may never come.
//
// A start is never scheduled twice for one ending: `handled_id` is the id of the last child
// whose end was acted on, set by whichever side saw it first (both do, for a crash during a
// call). A kill by the ring itself (a deadline, a stuck limit, the memory limit) is
// announced before the SIGKILL (replace(id, /*crash=*/false)), so the starter's later
// sighting is not taken for a crash.
#pragma once

#include <sched.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "knit/process.hpp"
#include "process/crash_loop.hpp"
#include "process/spawn.hpp"

namespace knit::detail {

class worker_box : public std::enable_shared_from_this<worker_box> {
 public:
  // `batch`: the process_workers that started it (it ends the box when the box is in the
  // standby list at its end), 0 for a worker made on a thread's first call.
  // `cpus`: its children's mask, the pool's building thread's (each child takes it from the
  // starter thread, which takes it before the spawn: start_child).
  worker_box(unsigned number, process_options options, const cpu_set_t& cpus,
             std::uint64_t batch = 0);
  worker_box(const worker_box&) = delete;
  worker_box& operator=(const worker_box&) = delete;

  unsigned number() const noexcept { return number_; }
  std::uint64_t batch() const noexcept { return batch_; }
  const process_options& options() const noexcept { return options_; }
  const cpu_set_t& cpus() const noexcept { return cpus_; }

  // The end of child `id` (0: no child yet, or the last start failed) was seen: when it is
  // the first sighting, records a crash (when `crash`) in the crash loop and schedules the
  // replacement at the crash loop's respawn time. Returns whether the worker is degraded.
  bool replace(std::uint64_t id, bool crash);
  // Schedules a start now unless one is scheduled, under way or waiting to be taken (a
  // worker with no child: the first call, or the call after a failed start).
  void want_child();
  // Waits for the scheduled start: the child, or the error of a start that failed (a failed
  // start counts as a crash in the crash loop, as a crashed child does, and as a child lost). With
  // spare_child, a child taken schedules the next (the spare) at the crash loop's respawn time.
  child_process take();
  // take() without the wait, for a host's ring (process_ring.hpp), which must not block: the
  // child or the failure (thrown as take() throws it) when the box holds one, else nullopt
  // with a start scheduled (when none was) whose end writes the listener.
  std::optional<child_process> try_take();
  // The eventfd the starter writes when it puts a child or a failure into this box (-1:
  // none). Set by a host ring; cleared (-1) before that fd is closed; under the mutex.
  void set_listener(int eventfd);
  // Whether the crash loop still holds K crashes now (after a call that went well).
  bool still_degraded();
  // No more starts for this worker: waits for a start under way, ends (kills and reaps) a
  // child not yet taken, forgets the children it had still to replace. Idempotent.
  void abandon();
  // Waits until no start is scheduled or under way (the started child, or a failure, is
  // then in the box). For process_workers, which starts all its workers before it returns.
  void wait_started();
  // The failure of the last start, when the box holds one (without taking it).
  std::optional<std::string> start_failure();

 private:
  friend class starter;
  void schedule_locked(crash_loop::clock::time_point at);
  // Sets degraded_ (and the degraded_workers count); while degraded, keeps a re-evaluation
  // scheduled with the starter (recheck_degraded).
  void set_degraded_locked(bool degraded);
  // The starter's re-evaluation, when due: degraded_ from the crash loop now.
  void recheck_degraded();
  // take()'s tail, with ready_, failed_ or abandoned_ set; under the mutex.
  child_process take_locked();

  const unsigned number_;
  const process_options options_;
  const cpu_set_t cpus_;
  const std::uint64_t batch_;
  std::mutex mutex_;
  std::condition_variable changed_;
  crash_loop crash_loop_;
  bool degraded_ = false;
  bool abandoned_ = false;
  bool scheduled_ = false;          // a start is queued with the starter or under way
  bool starting_ = false;           // the starter is spawning, handshaking, or ending one abandoned
  bool recheck_scheduled_ = false;  // a recheck_degraded is queued with the starter
  std::uint64_t handled_id_ = 0;
  // This worker's children lost (a death or kill sighted by replace(), a failed start taken)
  // and not replaced yet: its next successful start takes one and counts a respawn. Only this
  // box replaces them; abandon() drops them (a worker that ends replaces nothing), so no
  // later start, of another pool's worker, counts as their respawn.
  std::uint64_t lost_ = 0;
  std::optional<child_process> ready_;
  int listener_ = -1;  // under mutex_: set_listener
  struct start_failure_record {
    errc code;
    std::string message;  // message_of() the process_error the start threw
  };
  std::optional<start_failure_record> failed_;
};

// Spawns knit-proc-`number` with `options` and waits for its handshake; on success the
// child is counted in children_live (children_started and respawned are its box's start's to
// count: only the box knows whether it replaces a child), on failure it is killed and reaped.
// Throws process_error(worker_start_failed) naming the cause.
child_process start_child(unsigned number, const process_options& options, const cpu_set_t& cpus);

// What `e` was made with: its what() less the ": <code's message>" system_error appends.
std::string message_of(const process_error& e);

// Stops watching `c`, kills it (when `kill`) and reaps it unless the starter has (reap,
// child_end.hpp); returns how it ended, in words.
std::string end_child(child_process& c, bool kill);

}  // namespace knit::detail
