// answer_check: the host's reading of a child's answer (protocol in shared_region.hpp), as
// pure functions: the answer words a child wrote, checked against the request's sequence
// and the arena, and what the host then makes of them.
//
// What it guards: a child may have written anything into any of these words, and into the
// answer arena (a wild write, a task that scribbles over its own slot, a child built from
// other code). Whatever they hold, the host never reads past the arena and never fails in
// any other way than failing this one call: an answer_seq other than the call's nonce is no
// answer (answers_call: the ring waits on); for the call's own answer, a status out of
// range or answer_bytes over the arena for a status whose bytes are copied mean the child
// broke the protocol (the caller kills it). check_answer still refuses a foreign seq, for a
// caller that did not ask answers_call first. Invariant (KNIT_ASSERT): a verdict
// that lets the host copy n bytes has n <= arena_bytes.
//
// Kept apart from process_ring (the mechanism: eventfds, pidfd, respawn) so that these
// checks can be tested on every verdict and fuzzed without a child (fuzz_process_answer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "process/shared_region.hpp"

namespace knit::detail {

// The three answer words of a lane, as read once by the host.
struct answer_words {
  std::uint64_t seq;
  std::uint32_t status;
  std::uint64_t bytes;
};

// Reads each answer word once (answer_seq with acquire: it publishes the others).
inline answer_words read_answer_words(lane_words& lane) noexcept {
  const std::uint64_t seq = load(lane.answer_seq, std::memory_order_acquire);
  return {seq, load(lane.answer_status), load(lane.answer_bytes)};
}

// Whether `w` answers the call whose nonce is `expected_seq` (process_ring.hpp): any other
// answer_seq is no answer yet, whatever the other words hold (stale, or forged ahead).
inline bool answers_call(const answer_words& w, std::uint64_t expected_seq) noexcept {
  return w.seq == expected_seq;
}

enum class answer_kind {
  ok,             // `bytes` of answer in the arena
  task_threw,     // `bytes` of the exception's what() in the arena
  too_large,      // the answer did not fit: `bytes` is the size it needed (any value)
  bad_request,    // the child refused the request
  out_of_memory,  // the task went over the memory limit: replace the child
  cancelled,      // not run: the host took it back first (claim)
  broken,         // the child broke the protocol: `why` says how; kill it
};

struct answer_verdict {
  answer_kind kind;
  std::uint64_t bytes = 0;
  std::string why;  // broken only: "answer_status 99 out of range"

  // The bytes the host may copy out of the answer arena: `bytes` for ok and task_threw
  // (never over the arena), 0 for every other verdict.
  std::size_t copy_bytes() const noexcept {
    return kind == answer_kind::ok || kind == answer_kind::task_threw
               ? static_cast<std::size_t>(bytes)
               : 0;
  }
};

// Checks `w` against the request's sequence and the arena (arena_bytes: the size the host
// mapped, process_options::arena_bytes). `cancel_asked`: whether the host's claim on this
// call landed; a `cancelled` answer to a call it did not is a broken protocol.
answer_verdict check_answer(const answer_words& w, std::uint64_t expected_seq,
                            std::size_t arena_bytes, bool cancel_asked = false);

// The copy_bytes() bytes at the start of `answer_arena` (arena_bytes long).
std::string copy_answer(const answer_verdict& v, const char* answer_arena, std::size_t arena_bytes);

// What the host makes of a verdict other than broken (the caller handles that one first:
// it kills the child). ok: returns the answer. task_threw: throws process_error
// (task_failed) "knit: process task 'T' threw: <its message>". too_large: throws
// process_error (payload_too_large) naming both sizes. bad_request: throws process_error
// (worker_crashed) "<who()> refused the request as malformed"; `who` (a callable giving the
// task's and child's names) is called for that one only, keeping ok free of it.
std::string take_answer_text(const answer_verdict& v, std::string_view task,
                             const char* answer_arena, std::size_t arena_bytes);
[[noreturn]] void throw_refused_request(std::string_view who);

template <class Who>
std::string take_answer(const answer_verdict& v, std::string_view task, const char* answer_arena,
                        std::size_t arena_bytes, Who&& who) {
  if (v.kind == answer_kind::bad_request) throw_refused_request(who());
  return take_answer_text(v, task, answer_arena, arena_bytes);
}

// The message of a broken verdict, up to how the killed child ended (the caller appends
// it): "<who> broke the protocol (<why>); the worker was killed: ".
std::string broken_message(std::string_view who, const answer_verdict& v);

}  // namespace knit::detail
