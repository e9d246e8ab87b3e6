// The end of one child process, shared by its owner (the ring that calls it, or
// the worker_box that holds it until a ring takes it) and the starter's watch of its
// pidfd (starter.hpp). Whichever of the two sees the child end first reaps it, at once:
//
//   owner                                   starter (its dup of the pidfd readable)
//   end_child: unwatch, SIGKILL when it     reap(end, dup); the crash is counted here when
//     kills, reap(end, pidfd)                 no call was in flight (an idle death: no owner
//   a call: in_call = true before the         is looking), then box->replace(id)
//     request, false once it is answered
//
// reap() runs waitid under `mutex`, and records how the child ended (in words, `how`, and as
// the kernel said it, `exit`), so exactly one waitid succeeds and the other side reads the
// same from the record: an idle child killed from outside is a zombie only until the
// starter's poll returns, not until its worker's next call (which may never come), and a
// crash during a call keeps its message ("killed by signal 11") and its status whichever
// side reaped it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "process/exit_status.hpp"

namespace knit::detail {

struct child_end {
  std::mutex mutex;
  bool reaped = false;        // under mutex
  std::string how;            // under mutex: how it ended, in words, once reaped
  child_exit exit;            // under mutex: waitid's si_code and si_status, once reaped
  bool live_counted = false;  // under mutex: counted in children_live (handshake done)
  // Writer: the owner (true before a request is written, false once its answer is read).
  // Reader: the starter, after it reaped the child: a death while no call was in flight is
  // counted as a crash by the starter, since no call will report it; one during a call is
  // the owner's to name (a crash, or a sandbox kill, counted apart).
  std::atomic<bool> in_call{false};
  // Set by whichever side counts this child's crash (exchange): a death both sides see is
  // counted once.
  std::atomic<bool> crash_counted{false};
};

// Reaps the child behind `pidfd` (either side's descriptor of it) unless it is reaped
// already, decrements children_live when it was counted, and returns how it ended. Blocks
// until it has ended: call it once the pidfd is readable or after a SIGKILL.
std::string reap(child_end& end, int pidfd);

// How the child ended as waitid reported it (reap's record; unknown before the reap). What
// the host judges a death by (judge_death, sandbox.hpp): never a word the child wrote.
child_exit how_it_ended(child_end& end);

// Counts the crash of this child unless it is counted already.
void count_crash_once(child_end& end);

}  // namespace knit::detail
