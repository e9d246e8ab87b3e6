// fuzz_process_answer: the host's reading of a process worker's answer
// (src/process/answer_check.hpp) on answer words and arena contents a child may have
// written, whatever they are, then what the ring (process_ring.cpp) does with the verdict:
// copy the answer out of the arena into a std::string, or build the error it fails with.
//
// Input layout (little-endian; a short input is padded with zeros):
//   bytes  0..7   the host's expected sequence (its request_seq)
//   bytes  8..15  answer_seq
//   bytes 16..19  answer_status
//   bytes 20..27  answer_bytes
//   bytes 28..29  the arena's size: 1 + (value % 4096)
//   byte  30      bit 0: the host had taken the call back (claim), so `cancelled` answers it;
//                 bit 1: the expected sequence is a fresh nonce (call_nonce.hpp) drawn
//                 against bytes 31..38 as the lane's previous one, not bytes 0..7
//   bytes 31..38  the lane's previous sequence (the answer last taken there): a stale or
//                 forged answer_seq the fuzzer may repeat in bytes 8..15
//   bytes 39..    the answer arena's contents (the rest of the arena is zero)
// The arena is a heap block of exactly that size, so ASan reports any read past it.
//
// Checked, besides ASan/UBSan:
//   - the ring's gate (answers_call): an answer_seq other than the call's nonce — stale (the
//     lane's previous), forged ahead for another call, anything — is no answer: nothing is
//     read past the words; a fresh nonce is never 0 nor the lane's previous one;
//   - a verdict that lets the host copy n bytes has n <= the arena;
//   - the verdict is the protocol's (shared_region.hpp), restated here on its own: answer_seq
//     other than the request's, a status outside 1..6 (6, cancelled, only for a call given
//     up), or answer_bytes over the arena for a status other than too_large is broken (with
//     a reason naming that word); else ok, task_threw, too_large (any size), bad_request,
//     out_of_memory or cancelled, as the status says;
//   - ok's answer is the arena's first answer_bytes bytes; every other verdict fails its call
//     with the code the ring gives it (task_failed with the copied message, up to a
//     NUL in it, since what() is a C string; payload_too_large; worker_crashed).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>

#include "knit/error.hpp"
#include "knit/process.hpp"
#include "process/answer_check.hpp"
#include "process/call_nonce.hpp"
#include "process/shared_region.hpp"

namespace {

using knit::detail::answer_kind;

constexpr std::size_t header_bytes = 39;
constexpr std::size_t max_arena = 4096;

template <class T>
T read_le(const std::uint8_t* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_process_answer: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check(bool ok, const char* what, const std::string& detail = {}) {
  if (!ok) fail(what, detail);
}

// The protocol's verdict, restated apart from answer_check.cpp.
answer_kind expected_kind(std::uint64_t expected_seq, std::uint64_t seq, std::uint32_t status,
                          std::uint64_t bytes, std::size_t arena, bool cancel_asked) {
  if (seq != expected_seq || status < 1 || status > 6) return answer_kind::broken;
  if (status == 6) return cancel_asked ? answer_kind::cancelled : answer_kind::broken;
  if (status == 3) return answer_kind::too_large;
  if (bytes > arena) return answer_kind::broken;
  return status == 1   ? answer_kind::ok
         : status == 2 ? answer_kind::task_threw
         : status == 5 ? answer_kind::out_of_memory
                       : answer_kind::bad_request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint8_t head[header_bytes] = {};
  std::memcpy(head, data, size < header_bytes ? size : header_bytes);
  const std::uint64_t previous_seq = read_le<std::uint64_t>(head + 31);
  std::uint64_t expected_seq = read_le<std::uint64_t>(head);
  if ((head[30] & 2) != 0) {
    static knit::detail::call_nonce nonces;
    expected_seq = nonces.next(previous_seq);
    check(expected_seq != 0 && expected_seq != previous_seq, "a nonce repeats the lane's last",
          std::to_string(expected_seq));
  }
  const std::size_t arena_bytes = 1 + read_le<std::uint16_t>(head + 28) % max_arena;

  // What a child left in the header: the host reads it word by word, as it would the region.
  const bool cancel_asked = (head[30] & 1) != 0;
  knit::detail::lane_words lane{};
  lane.answer_seq = read_le<std::uint64_t>(head + 8);
  lane.answer_status = read_le<std::uint32_t>(head + 16);
  lane.answer_bytes = read_le<std::uint64_t>(head + 20);
  const auto arena = std::make_unique<char[]>(arena_bytes);  // zeroed, exactly arena_bytes
  if (size > header_bytes) {
    const std::size_t n = size - header_bytes < arena_bytes ? size - header_bytes : arena_bytes;
    std::memcpy(arena.get(), data + header_bytes, n);
  }

  const knit::detail::answer_words w = knit::detail::read_answer_words(lane);
  // The ring's gate first: only the call's own nonce is an answer.
  const bool answered = knit::detail::answers_call(w, expected_seq);
  check(answered == (w.seq == expected_seq), "the gate takes a foreign sequence",
        std::to_string(w.seq) + "/" + std::to_string(expected_seq));
  if (w.seq == previous_seq && previous_seq != expected_seq) {
    check(!answered, "a stale answer taken", std::to_string(w.seq));
  }
  const knit::detail::answer_verdict v =
      knit::detail::check_answer(w, expected_seq, arena_bytes, cancel_asked);
  const std::string words = "seq " + std::to_string(w.seq) + "/" + std::to_string(expected_seq) +
                            " status " + std::to_string(w.status) + " bytes " +
                            std::to_string(w.bytes) + " arena " + std::to_string(arena_bytes);
  check(v.copy_bytes() <= arena_bytes, "a verdict copies more than the arena", words);
  check(v.kind == expected_kind(expected_seq, w.seq, w.status, w.bytes, arena_bytes, cancel_asked),
        "verdict differs from the protocol", words);

  if (!answered) {
    // The ring waits on; check_answer, asked anyway, refuses it too.
    check(v.kind == answer_kind::broken, "a foreign sequence not refused", words);
    return 0;
  }
  // What the ring does next. The child's names, as who() writes them.
  const std::string who = "knit: process task 'fuzz' (pid 4242, knit-proc-1)";
  if (v.kind == answer_kind::broken) {
    check(!v.why.empty(), "broken without a reason", words);
    const char* word = w.seq != expected_seq ? "answer_seq "
                       : (w.status < 1 || w.status > 6 || (w.status == 6 && !cancel_asked))
                           ? "answer_status "
                           : "answer_bytes ";
    check(v.why.rfind(word, 0) == 0, "broken names another word", v.why + "; " + words);
    const std::string message =
        knit::detail::broken_message(who, v) + "killed by signal 9 (SIGKILL)";
    check(message.find(v.why) != std::string::npos, "broken message lacks its reason", message);
    return 0;
  }
  try {
    const std::string answer =
        knit::detail::take_answer(v, "fuzz", arena.get(), arena_bytes, [&] { return who; });
    check(v.kind == answer_kind::ok, "an answer taken from a failed call", words);
    check(answer.size() == w.bytes && std::memcmp(answer.data(), arena.get(), answer.size()) == 0,
          "ok's answer is not the arena's first answer_bytes bytes", words);
  } catch (const knit::process_error& e) {
    const std::error_code code = e.code();
    const std::string what = e.what();
    switch (v.kind) {
      case answer_kind::task_threw:
        check(code == knit::errc::task_failed, "task_threw's code", what);
        // what() is a C string: a NUL the child wrote ends the message there (a real child
        // writes its exception's what(), which has none).
        check(what.rfind("knit: process task 'fuzz' threw: " +
                             std::string(arena.get(), strnlen(arena.get(), v.copy_bytes())),
                         0) == 0,
              "task_threw's message is not the child's", words);
        break;
      case answer_kind::too_large:
        check(code == knit::errc::payload_too_large, "too_large's code", what);
        check(what.find(std::to_string(w.bytes)) != std::string::npos,
              "too_large's message lacks the size", what);
        break;
      case answer_kind::bad_request:
        check(code == knit::errc::worker_crashed, "bad_request's code", what);
        check(what.rfind(who, 0) == 0, "bad_request's message lacks the child", what);
        break;
      case answer_kind::cancelled:
        // The ring drops a withdrawn call's answer before taking it; taken anyway, it is a
        // failed call, never a read of the arena.
        check(code == knit::errc::worker_crashed, "cancelled's code", what);
        break;
      case answer_kind::out_of_memory:
        // The ring replaces the child before taking an answer; taken anyway, it is a
        // failed call, never a read of the arena.
        check(code == knit::errc::worker_crashed, "out_of_memory's code", what);
        break;
      case answer_kind::ok:
      case answer_kind::broken: fail("ok or broken threw", what);
    }
  }
  return 0;
}
