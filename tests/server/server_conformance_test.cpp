// The llhttp request corpus against knit-server (tests/server/conformance/, written by
// bench/conformance/extract_llhttp.py from llhttp 9.4.2's test/request/*.md): every case that
// llhttp refuses is refused by knit-server too (a 4xx/5xx, then the close), and a canary
// `GET /metrics` sent after it, or after a request that said Connection: close, is never
// answered. A case llhttp accepts is answered, one response per message, unless it is one
// of the documented differences (deliberate.json; docs/server-safety.md), which are held to
// what that file says instead. bench/conformance/run_conformance.py runs the
// same corpus against nginx as well and writes the table.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_fixture.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;

constexpr std::string_view kCanary = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

json::value read_json(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::string from_hex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// What knit-server answered on one connection, read until it closed.
struct answers {
  std::vector<int> statuses;
  bool closed = false;
  bool canary_answered = false;
};

answers send_case(std::uint16_t port, const std::string& bytes) {
  answers a;
  connection c(port, std::chrono::seconds(5));
  c.send(bytes);  // may fail once the server has refused and closed: its answer still reads
  c.shutdown_send();
  // The one HEAD case in the corpus is a single request: its response has no body.
  bool head_request = bytes.rfind("HEAD ", 0) == 0;
  for (;;) {
    http_response res;
    const read_outcome outcome = c.read_response(res, head_request);
    head_request = false;
    if (outcome == read_outcome::closed_cleanly) {
      a.closed = true;
      break;
    }
    if (outcome != read_outcome::complete) break;  // partial, malformed or timed out: not closed
    if (res.status == 100) continue;
    a.statuses.push_back(res.status);
    // knit's /metrics page is Prometheus text; no other answer has a "# TYPE" line.
    if (res.status == 200 && res.body.find("# TYPE") != std::string::npos) a.canary_answered = true;
  }
  return a;
}

// A refusal: a 4xx or 5xx other than the 404 for a path without a route.
bool refused(const answers& a) {
  return !a.statuses.empty() && a.statuses.back() >= 400 && a.statuses.back() != 404 && a.closed;
}

std::string describe(const answers& a) {
  std::string s;
  for (int st : a.statuses) s += std::to_string(st) + " ";
  return s + (a.closed ? "closed" : "open") + (a.canary_answered ? " CANARY ANSWERED" : "");
}

TEST(conformance, LlhttpRequestCorpus) {
  const json::object corpus = read_json(KNIT_CONFORMANCE_DIR "/llhttp_requests.json").as_object();
  const json::object deliberate =
      read_json(KNIT_CONFORMANCE_DIR "/deliberate.json").as_object().at("cases").as_object();
  server_process server(env_map{{"KNIT_MODE", "inline"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  int checked = 0;
  for (const json::value& v : corpus.at("cases").as_array()) {
    const json::object& c = v.as_object();
    const std::string id(c.at("id").as_string());
    const std::string verdict(c.at("llhttp").as_string());
    const auto messages = static_cast<std::size_t>(c.at("messages").as_int64());
    std::string bytes = from_hex(c.contains("sent_hex") ? c.at("sent_hex").as_string()
                                                        : c.at("raw_hex").as_string());
    const bool canary = verdict == "invalid" || verdict == "closed";
    if (canary) bytes += kCanary;
    const answers a = send_case(server.port(), bytes);
    SCOPED_TRACE(id + " (" + std::string(c.at("name").as_string()) + "): llhttp " + verdict +
                 ", knit " + describe(a));
    ++checked;

    EXPECT_FALSE(a.canary_answered) << "a request hidden after a refused one was answered";
    EXPECT_TRUE(a.closed) << "the server did not close after the client's end of stream";
    if (deliberate.contains(id)) {
      // Documented (docs/server-safety.md): knit refuses what llhttp accepts, or gives no
      // answer (waits, then closes) where llhttp refuses.
      const json::string& knit = deliberate.at(id).at("knit").as_string();
      if (knit == "refused") {
        EXPECT_TRUE(refused(a));
      } else {
        EXPECT_EQ(knit, "silent");
        EXPECT_TRUE(a.statuses.empty());
      }
      continue;
    }
    if (verdict == "invalid") {
      EXPECT_TRUE(refused(a)) << "llhttp refuses these bytes";
    } else if (verdict == "upgrade") {
      // knit implements neither CONNECT nor Upgrade: it answers the request as HTTP/1.1.
      EXPECT_GE(a.statuses.size(), 1u);
    } else {
      // valid, incomplete (the end is still to come), closed: one answer per message llhttp
      // completed, none a refusal.
      EXPECT_EQ(a.statuses.size(), messages);
      EXPECT_FALSE(refused(a));
    }
  }
  EXPECT_EQ(checked, static_cast<int>(corpus.at("cases").as_array().size()));
  EXPECT_GT(checked, 100);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test
