// fuzz_response_parser: knit-load's HTTP/1.1 response parser (bench/load/response_parser)
// must not care how the socket splits the bytes.
//
// Input layout: byte 0 = how many split points (0..15), the next 2 bytes per split point =
// where (mod the stream length), then byte k = which responses answer HEAD requests (bit i
// for response i), the rest = the byte stream a server sent on one connection.
// The stream is parsed as a sequence of responses (each kComplete's leftover starts the
// next, as the load generator does), once in one piece and once in the chosen pieces, and:
//   - both give the same sequence of outcomes: result, status, keep-alive, body bytes,
//     error text, and where in the stream each response ended;
//   - on kComplete, `consumed` never exceeds the piece (on kNeedMore the parser takes the
//     whole piece and `consumed` means nothing, as connection.cpp relies on);
//   - nothing crashes (ASan/UBSan).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "response_parser.hpp"

namespace {

using knit_load::response_parser;
using feed_result = response_parser::feed_result;

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_response_parser: property broken: %s %s\n", what, detail.c_str());
  std::abort();
}

struct outcome {
  feed_result result;
  int status;
  bool keep_alive;
  std::uint64_t body_bytes;
  std::string error;
  std::size_t end;  // stream offset just past this response (complete) or of the failure
  bool operator==(const outcome&) const = default;
};

std::string describe(const outcome& o) {
  return "result=" + std::to_string(static_cast<int>(o.result)) +
         " status=" + std::to_string(o.status) + " keep_alive=" + std::to_string(o.keep_alive) +
         " body=" + std::to_string(o.body_bytes) + " end=" + std::to_string(o.end) + " error='" +
         o.error + "'";
}

// Parses `stream` delivered as the pieces [cuts[i], cuts[i+1]), like a connection's reads.
std::vector<outcome> parse(std::string_view stream, const std::vector<std::size_t>& cuts,
                           std::uint8_t head_mask) {
  std::vector<outcome> outcomes;
  response_parser parser;
  parser.reset(head_mask & 1);
  std::size_t offset = 0;  // stream offset of the next unparsed byte
  auto record = [&](feed_result r) {
    // Where an error is noticed depends on the pieces (the whole piece is scanned), so
    // only a completed response's end is compared.
    const std::size_t end = r == feed_result::kError ? std::string_view::npos : offset;
    outcomes.push_back(
        {r, parser.status(), parser.keep_alive(), parser.body_bytes(), parser.error(), end});
    const std::size_t i = outcomes.size();
    parser.reset(i < 8 && ((head_mask >> i) & 1));
  };
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    std::string_view piece = stream.substr(cuts[k], cuts[k + 1] - cuts[k]);
    while (!piece.empty()) {
      std::size_t consumed = 0;
      const auto r = parser.feed(piece, consumed);
      if (consumed > piece.size()) fail("consumed more than the piece");
      if (r == feed_result::kNeedMore) {
        offset += piece.size();  // kNeedMore takes the whole piece; `consumed` is unset
        break;
      }
      if (r == feed_result::kError) {
        record(r);
        return outcomes;  // the connection is abandoned after an error
      }
      offset += consumed;
      piece.remove_prefix(consumed);
      record(r);
    }
  }
  // The peer closed. A response that never started is no response at all.
  if (parser.started()) record(parser.finish_eof());
  return outcomes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t n_splits = data[0] % 16;
  if (size < 2 + 2 * n_splits) return 0;
  const std::uint8_t head_mask = data[1 + 2 * n_splits];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2 + 2 * n_splits,
                                size - 2 - 2 * n_splits);

  std::vector<std::size_t> cuts{0};
  for (std::size_t i = 0; i < n_splits; ++i) {
    const std::size_t at = static_cast<std::size_t>(data[1 + 2 * i]) << 8 | data[2 + 2 * i];
    cuts.push_back(stream.empty() ? 0 : at % (stream.size() + 1));
  }
  cuts.push_back(stream.size());
  std::sort(cuts.begin(), cuts.end());

  const auto whole = parse(stream, {0, stream.size()}, head_mask);
  const auto split = parse(stream, cuts, head_mask);
  if (whole.size() != split.size())
    fail("split changes the number of responses",
         std::to_string(whole.size()) + " vs " + std::to_string(split.size()));
  for (std::size_t i = 0; i < whole.size(); ++i)
    if (!(whole[i] == split[i]))
      fail("split changes a response", "#" + std::to_string(i) + " whole: " + describe(whole[i]) +
                                           " | split: " + describe(split[i]));
  return 0;
}
