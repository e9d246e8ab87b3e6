// answer_check: the checks of a child's answer words and what the host makes of them
// (answer_check.hpp).
#include "process/answer_check.hpp"

#include "invariant.hpp"
#include "knit/error.hpp"
#include "knit/process.hpp"

namespace knit::detail {

answer_verdict check_answer(const answer_words& w, std::uint64_t expected_seq,
                            std::size_t arena_bytes, bool cancel_asked) {
  if (w.seq != expected_seq) {
    return {answer_kind::broken, 0,
            "answer_seq " + std::to_string(w.seq) + " for request " + std::to_string(expected_seq)};
  }
  if (w.status == 0 || w.status > answer_status_max) {
    return {answer_kind::broken, 0, "answer_status " + std::to_string(w.status) + " out of range"};
  }
  const auto status = static_cast<answer_status>(w.status);
  if (status == answer_status::cancelled) {
    if (cancel_asked) return {answer_kind::cancelled, 0, {}};
    return {answer_kind::broken, 0, "answer_status 6 (cancelled) for a call not given up"};
  }
  // too_large's bytes are a size the child needed, never copied: any value is an answer.
  if (status == answer_status::too_large) return {answer_kind::too_large, w.bytes, {}};
  if (w.bytes > arena_bytes) {
    return {answer_kind::broken, 0,
            "answer_bytes " + std::to_string(w.bytes) + " over the arena of " +
                std::to_string(arena_bytes)};
  }
  answer_verdict v{answer_kind::bad_request, 0, {}};
  switch (status) {
    case answer_status::ok: v = {answer_kind::ok, w.bytes, {}}; break;
    case answer_status::task_threw: v = {answer_kind::task_threw, w.bytes, {}}; break;
    case answer_status::too_large: break;  // returned above
    case answer_status::bad_request: break;
    case answer_status::out_of_memory: v = {answer_kind::out_of_memory, 0, {}}; break;
    case answer_status::cancelled: break;  // returned above
  }
  KNIT_ASSERT(v.copy_bytes() <= arena_bytes);
  return v;
}

std::string copy_answer(const answer_verdict& v, const char* answer_arena,
                        std::size_t arena_bytes) {
  const std::size_t n = v.copy_bytes();
  KNIT_ASSERT(n <= arena_bytes);
  (void)arena_bytes;  // read only by the check (compiled out in Release)
  return std::string(answer_arena, n);
}

std::string take_answer_text(const answer_verdict& v, std::string_view task,
                             const char* answer_arena, std::size_t arena_bytes) {
  switch (v.kind) {
    case answer_kind::ok: return copy_answer(v, answer_arena, arena_bytes);
    case answer_kind::task_threw:
      throw process_error(errc::task_failed,
                          "knit: process task '" + std::string(task) +
                              "' threw: " + copy_answer(v, answer_arena, arena_bytes));
    case answer_kind::too_large:
      throw process_error(errc::payload_too_large, "knit: process task '" + std::string(task) +
                                                       "': answer of " + std::to_string(v.bytes) +
                                                       " bytes is over the arena of " +
                                                       std::to_string(arena_bytes) +
                                                       " bytes (process_options::arena_bytes)");
    case answer_kind::bad_request: break;
    case answer_kind::out_of_memory: break;
    case answer_kind::cancelled: break;
    case answer_kind::broken: break;
  }
  // Not an answer to take (take_answer handles bad_request; the caller, broken): still a
  // failed call, never a read of the arena.
  throw process_error(errc::worker_crashed, "knit: process task '" + std::string(task) +
                                                "': no answer to take (" + v.why + ")");
}

void throw_refused_request(std::string_view who) {
  // The child refused what the host sent: a host bug or a child built differently.
  throw process_error(errc::worker_crashed, std::string(who) + " refused the request as malformed");
}

std::string broken_message(std::string_view who, const answer_verdict& v) {
  return std::string(who) + " broke the protocol (" + v.why + "); the worker was killed: ";
}

}  // namespace knit::detail
