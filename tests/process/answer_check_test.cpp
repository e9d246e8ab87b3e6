// answer_check (src/process/answer_check.hpp): each verdict the host can reach from the
// answer words a child wrote, at the arena's boundary (answer_bytes == arena_bytes is an
// answer, arena_bytes + 1 is a broken protocol), too_large with any size, and what the host
// then makes of each verdict (the copied answer, the error code and message). No children.
#include "process/answer_check.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "knit/error.hpp"
#include "knit/process.hpp"

namespace {

using knit::detail::answer_kind;
using knit::detail::answer_verdict;
using knit::detail::answer_words;
using knit::detail::check_answer;

constexpr std::size_t arena = 64;
constexpr std::uint64_t seq = 7;
constexpr std::uint32_t ok = 1, task_threw = 2, too_large = 3, bad_request = 4;
constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();

// An arena of exactly `arena` bytes holding 'a', 'b', ... so a copy's length and start show.
std::vector<char> arena_bytes() {
  std::vector<char> a(arena);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>('a' + i % 26);
  return a;
}

// take_answer on `v`; returns the answer, or the error's code and message.
struct taken {
  bool ok = false;
  std::string text;  // the answer, or what() without the ": <code's message>" system_error adds
  std::error_code code;
};
taken take(const answer_verdict& v) {
  const std::vector<char> a = arena_bytes();
  taken t;
  try {
    t.text = knit::detail::take_answer(v, "render", a.data(), a.size(), [] {
      return std::string("knit: process task 'render' (pid 1)");
    });
    t.ok = true;
  } catch (const knit::process_error& e) {
    t.code = e.code();
    t.text = e.what();
    const std::string suffix = ": " + t.code.message();
    EXPECT_TRUE(t.text.ends_with(suffix)) << t.text;
    if (t.text.ends_with(suffix)) t.text.resize(t.text.size() - suffix.size());
  }
  return t;
}

TEST(answer_check, ok_copies_its_bytes) {
  const answer_verdict v = check_answer({seq, ok, 5}, seq, arena);
  EXPECT_EQ(v.kind, answer_kind::ok);
  EXPECT_EQ(v.copy_bytes(), 5u);
  const taken t = take(v);
  ASSERT_TRUE(t.ok) << t.text;
  EXPECT_EQ(t.text, "abcde");
}

TEST(answer_check, ok_of_zero_bytes_is_an_empty_answer) {
  const taken t = take(check_answer({seq, ok, 0}, seq, arena));
  ASSERT_TRUE(t.ok) << t.text;
  EXPECT_EQ(t.text, "");
}

TEST(answer_check, answer_of_exactly_the_arena_is_an_answer) {
  for (std::uint32_t status : {ok, task_threw}) {
    const answer_verdict v = check_answer({seq, status, arena}, seq, arena);
    EXPECT_EQ(v.kind, status == ok ? answer_kind::ok : answer_kind::task_threw);
    EXPECT_EQ(v.copy_bytes(), arena);
  }
  const std::vector<char> a = arena_bytes();
  const taken t = take(check_answer({seq, ok, arena}, seq, arena));
  ASSERT_TRUE(t.ok) << t.text;
  EXPECT_EQ(t.text, std::string(a.begin(), a.end()));
}

TEST(answer_check, one_byte_over_the_arena_breaks_the_protocol) {
  for (std::uint32_t status : {ok, task_threw, bad_request}) {
    for (std::uint64_t bytes : {std::uint64_t{arena + 1}, max64}) {
      const answer_verdict v = check_answer({seq, status, bytes}, seq, arena);
      EXPECT_EQ(v.kind, answer_kind::broken) << status << " " << bytes;
      EXPECT_EQ(v.copy_bytes(), 0u);
      EXPECT_EQ(v.why, "answer_bytes " + std::to_string(bytes) + " over the arena of 64");
    }
  }
}

TEST(answer_check, task_threw_fails_with_its_message) {
  const answer_verdict v = check_answer({seq, task_threw, 3}, seq, arena);
  EXPECT_EQ(v.kind, answer_kind::task_threw);
  const taken t = take(v);
  ASSERT_FALSE(t.ok);
  EXPECT_EQ(t.code, knit::errc::task_failed);
  EXPECT_EQ(t.text, "knit: process task 'render' threw: abc");
}

TEST(answer_check, too_large_with_any_size_copies_nothing) {
  for (std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{arena}, std::uint64_t{arena + 1},
                              std::uint64_t{1} << 40, max64}) {
    const answer_verdict v = check_answer({seq, too_large, bytes}, seq, arena);
    EXPECT_EQ(v.kind, answer_kind::too_large) << bytes;
    EXPECT_EQ(v.bytes, bytes);
    EXPECT_EQ(v.copy_bytes(), 0u);
    const taken t = take(v);
    ASSERT_FALSE(t.ok);
    EXPECT_EQ(t.code, knit::errc::payload_too_large);
    EXPECT_EQ(t.text, "knit: process task 'render': answer of " + std::to_string(bytes) +
                          " bytes is over the arena of 64 bytes (process_options::arena_bytes)");
  }
}

TEST(answer_check, bad_request_is_a_refused_request_naming_the_child) {
  const answer_verdict v = check_answer({seq, bad_request, 0}, seq, arena);
  EXPECT_EQ(v.kind, answer_kind::bad_request);
  EXPECT_EQ(v.copy_bytes(), 0u);
  const taken t = take(v);
  ASSERT_FALSE(t.ok);
  EXPECT_EQ(t.code, knit::errc::worker_crashed);
  EXPECT_EQ(t.text, "knit: process task 'render' (pid 1) refused the request as malformed");
}

TEST(answer_check, a_sequence_other_than_the_request_breaks_the_protocol) {
  for (std::uint64_t other : {std::uint64_t{0}, seq - 1, seq + 1, max64}) {
    const answer_verdict v = check_answer({other, ok, 1}, seq, arena);
    EXPECT_EQ(v.kind, answer_kind::broken);
    EXPECT_EQ(v.copy_bytes(), 0u);
    EXPECT_EQ(v.why, "answer_seq " + std::to_string(other) + " for request 7");
  }
}

TEST(answer_check, a_status_out_of_range_breaks_the_protocol) {
  for (std::uint32_t status : {0u, 7u, 99u, 0xffffffffu}) {
    const answer_verdict v = check_answer({seq, status, 0}, seq, arena);
    EXPECT_EQ(v.kind, answer_kind::broken);
    EXPECT_EQ(v.why, "answer_status " + std::to_string(status) + " out of range");
  }
}

// `cancelled` is an answer only to a call the host gave up (cancel_seq): the child skipped it.
TEST(answer_check, cancelled_answers_only_a_call_given_up) {
  const answer_verdict asked = check_answer({seq, 6, max64}, seq, arena, /*cancel_asked=*/true);
  EXPECT_EQ(asked.kind, answer_kind::cancelled);
  EXPECT_EQ(asked.copy_bytes(), 0u);
  const answer_verdict not_asked = check_answer({seq, 6, 0}, seq, arena);
  EXPECT_EQ(not_asked.kind, answer_kind::broken);
  EXPECT_EQ(not_asked.why, "answer_status 6 (cancelled) for a call not given up");
  // Given up or not, any other status is still an answer: the child may have run it first.
  EXPECT_EQ(check_answer({seq, ok, 1}, seq, arena, true).kind, answer_kind::ok);
}

// The sequence is checked first, then the status, then the size: the message names the first.
TEST(answer_check, the_first_broken_word_is_the_one_named) {
  EXPECT_EQ(check_answer({seq + 1, 99, max64}, seq, arena).why, "answer_seq 8 for request 7");
  EXPECT_EQ(check_answer({seq, 99, max64}, seq, arena).why, "answer_status 99 out of range");
}

TEST(answer_check, broken_message_is_what_the_crash_says_before_the_exit) {
  const answer_verdict v = check_answer({seq, 99, 0}, seq, arena);
  EXPECT_EQ(knit::detail::broken_message("knit: process task 'render' (pid 1)", v),
            "knit: process task 'render' (pid 1) broke the protocol (answer_status 99 out of "
            "range); the worker was killed: ");
  // Never taken as an answer, whoever asks.
  const taken t = take(v);
  ASSERT_FALSE(t.ok);
  EXPECT_EQ(t.code, knit::errc::worker_crashed);
}

TEST(answer_check, reads_the_words_of_a_lane) {
  knit::detail::region_header h{};
  h.lane[1].answer_seq = 41;
  h.lane[1].answer_status = task_threw;
  h.lane[1].answer_bytes = 12;
  const answer_words w = knit::detail::read_answer_words(h.lane[1]);
  EXPECT_EQ(w.seq, 41u);
  EXPECT_EQ(w.status, task_threw);
  EXPECT_EQ(w.bytes, 12u);
}

}  // namespace
