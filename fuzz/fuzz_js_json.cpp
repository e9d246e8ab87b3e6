// fuzz_js_json: JSON.parse (routes/js_json) and Number() (routes/js_number) on arbitrary
// bytes, as the routes see a request body: TextDecoder(fatal) first, then JSON.parse.
//
// Checked for every input (a broken property aborts; libFuzzer keeps the input):
//   - nothing crashes, and no exception other than js_error escapes to_number();
//   - round trip: a parsed document, written back as JSON (numbers in shortest form,
//     strings through JSON.stringify's quoting), parses again to the same tree: same kinds,
//     same booleans, numbers bit-identical (-0 included), same strings and member names
//     in the same order (duplicates kept), same child counts;
//   - numbers: for every finite number x in the tree, decimal_literal_value and
//     string_to_number of its shortest spelling give back x, and to_number of its node is x;
//   - string_to_number of the whole text never crashes, and agrees with
//     decimal_literal_value whenever the text is a plain JSON number.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routes/js_json.hpp"
#include "routes/js_number.hpp"
#include "routes/js_string.hpp"
#include "routes/routes.hpp"
#include "routes/utf8.hpp"

namespace {

namespace js = knit_server::routes::js;
namespace utf8 = knit_server::routes::utf8;

// Deeper documents are parsed and walked (iteratively, by the library) but not written
// back: the checker below recurses, and must not overflow its own stack on 16k '['.
constexpr int kMaxCheckDepth = 256;

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz_js_json: property broken: %s %s\n", what, detail.c_str());
  std::abort();
}

std::string shortest(double x) {
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return std::string(buf.data(), r.ptr);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Appends `n` as JSON. Returns false when the tree is deeper than kMaxCheckDepth.
bool write_json(const js::document& doc, const js::node& n, std::string& out, int depth) {
  if (depth > kMaxCheckDepth) return false;
  switch (n.type) {
    case js::kind::null: out += "null"; return true;
    case js::kind::boolean: out += n.boolean ? "true" : "false"; return true;
    case js::kind::number:
      // JSON.parse turns 1e400 into Infinity; 1e999 reads back as the same Infinity.
      if (std::isinf(n.number)) out += n.number > 0 ? "1e999" : "-1e999";
      else out += shortest(n.number);
      return true;
    case js::kind::string: js::append_json_quoted(out, doc.text(n)); return true;
    case js::kind::array:
    case js::kind::object: {
      const bool object = n.type == js::kind::object;
      out += object ? '{' : '[';
      for (const js::node* c = doc.first_child(n); c; c = doc.next_sibling(*c)) {
        if (c != doc.first_child(n)) out += ',';
        if (object) {
          js::append_json_quoted(out, doc.key(*c));
          out += ':';
        }
        if (!write_json(doc, *c, out, depth + 1)) return false;
      }
      out += object ? '}' : ']';
      return true;
    }
  }
  return false;
}

void check_same(const js::document& a, const js::node& x, const js::document& b, const js::node& y,
                bool in_object) {
  if (x.type != y.type) fail("kind changed in the round trip");
  if (in_object && a.key(x) != b.key(y)) fail("member name changed", std::string(a.key(x)));
  switch (x.type) {
    case js::kind::null: return;
    case js::kind::boolean:
      if (x.boolean != y.boolean) fail("boolean changed");
      return;
    case js::kind::number:
      if (!same_bits(x.number, y.number))
        fail("number changed", shortest(x.number) + " -> " + shortest(y.number));
      return;
    case js::kind::string:
      if (a.text(x) != b.text(y)) fail("string changed", std::string(a.text(x)));
      return;
    case js::kind::array:
    case js::kind::object: {
      if (x.size != y.size) fail("child count changed");
      const js::node* c = a.first_child(x);
      const js::node* d = b.first_child(y);
      std::uint32_t count = 0;
      for (; c && d; c = a.next_sibling(*c), d = b.next_sibling(*d), ++count)
        check_same(a, *c, b, *d, x.type == js::kind::object);
      if (c || d || count != x.size) fail("child list length differs from size");
      return;
    }
  }
}

void check_number(const js::document& doc, const js::node& n) {
  if (!std::isfinite(n.number)) return;
  const std::string s = shortest(n.number);
  if (!same_bits(js::decimal_literal_value(s), n.number))
    fail("decimal_literal_value(shortest(x)) != x", s);
  if (!same_bits(js::string_to_number(s), n.number)) fail("string_to_number(shortest(x)) != x", s);
  if (!same_bits(js::to_number(doc, &n), n.number)) fail("to_number(number node) != its value", s);
}

// Visits every node (iteratively: depth is unbounded) and checks each number.
void check_numbers(const js::document& doc) {
  std::vector<const js::node*> todo{&doc.root()};
  while (!todo.empty()) {
    const js::node* n = todo.back();
    todo.pop_back();
    if (n->type == js::kind::number) check_number(doc, *n);
    for (const js::node* c = doc.first_child(*n); c; c = doc.next_sibling(*c)) todo.push_back(c);
  }
}

bool is_plain_json_number(std::string_view s) {
  // -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') ++i;
  else if (!digits()) return false;
  if (i < s.size() && s[i] == '.' && (++i, !digits())) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::optional<std::string_view> text = utf8::decode_fatal(bytes);
  if (!text) return 0;  // the routes stop here too (invalid UTF-8 is "{}" / 400)

  const double whole = js::string_to_number(*text);
  if (is_plain_json_number(*text) && !same_bits(whole, js::decimal_literal_value(*text)))
    fail("string_to_number and decimal_literal_value disagree", std::string(*text));

  const std::optional<js::document> doc = js::document::parse(*text);
  if (!doc) return 0;
  check_numbers(*doc);
  try {
    (void)js::to_number(*doc, &doc->root());
  } catch (const knit_server::routes::js_error&) {
    // JS throws a TypeError here too ({"toString":1}); the routes answer 500.
  }

  std::string again;
  if (!write_json(*doc, doc->root(), again, 0)) return 0;
  const std::optional<js::document> reparsed = js::document::parse(again);
  if (!reparsed) fail("written-back JSON does not parse", again.substr(0, 200));
  check_same(*doc, doc->root(), *reparsed, reparsed->root(), false);
  return 0;
}
