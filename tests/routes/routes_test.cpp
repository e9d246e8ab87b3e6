// knit_routes against the reference routes' JS (docs/reference-server.md): /ping, /ssr and /jwt
// bodies byte for byte, and the JS semantics underneath them (TextDecoder, JSON.parse, Number(),
// trim, zod, React).
#include "routes/routes.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "routes/email.hpp"
#include "routes/js_json.hpp"
#include "routes/js_number.hpp"
#include "routes/js_string.hpp"
#include "routes/utf8.hpp"

namespace {

namespace routes = knit_server::routes;
namespace js = knit_server::routes::js;
using namespace std::string_literals;

constexpr std::string_view kTs = "2026-01-02T03:04:05.678Z";
const double kInf = std::numeric_limits<double>::infinity();

std::chrono::system_clock::time_point at_ms(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// ---------------------------------------------------------------- /ping and toISOString

TEST(iso8601, matches_to_iso_string) {
  EXPECT_EQ(routes::iso8601_ms(at_ms(0)), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(routes::iso8601_ms(at_ms(1764407739123)), "2025-11-29T09:15:39.123Z");
  EXPECT_EQ(routes::iso8601_ms(at_ms(951782400000)), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(routes::iso8601_ms(at_ms(1709251199999)), "2024-02-29T23:59:59.999Z");
  EXPECT_EQ(routes::iso8601_ms(at_ms(-2203891200000)), "1900-03-01T00:00:00.000Z");
  EXPECT_EQ(routes::iso8601_ms(at_ms(-1)), "1969-12-31T23:59:59.999Z");
}

TEST(iso8601, truncates_sub_milliseconds_toward_minus_infinity) {
  using namespace std::chrono;
  const auto t = system_clock::time_point(
      duration_cast<system_clock::duration>(milliseconds(1764407739123) + microseconds(999)));
  EXPECT_EQ(routes::iso8601_ms(t), "2025-11-29T09:15:39.123Z");
  const auto before_epoch =
      system_clock::time_point(duration_cast<system_clock::duration>(microseconds(-1)));
  EXPECT_EQ(routes::iso8601_ms(before_epoch), "1969-12-31T23:59:59.999Z");
}

TEST(ping_body, hono_json_of_the_reference_literal) {
  EXPECT_EQ(routes::ping_body("bun", at_ms(1764407739123)),
            R"({"ok":true,"pong":true,"runtime":"bun","ts":"2025-11-29T09:15:39.123Z"})");
}

TEST(ping_body, runtime_is_json_stringify_escaped) {
  EXPECT_EQ(
      routes::ping_body("a\"b\\c\n\x01\x1f\x7f\xE2\x80\xA8", at_ms(0)),
      "{\"ok\":true,\"pong\":true,\"runtime\":\"a\\\"b\\\\c\\n\\u0001\\u001f\x7f\xE2\x80\xA8\","
      "\"ts\":\"1970-01-01T00:00:00.000Z\"}");
}

// ---------------------------------------------------------------- TextDecoder (fatal)

TEST(utf8, accepts_well_formed_and_strips_one_bom) {
  EXPECT_EQ(routes::utf8::decode_fatal("abc"), "abc");
  EXPECT_EQ(routes::utf8::decode_fatal(""), "");
  EXPECT_EQ(routes::utf8::decode_fatal("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(routes::utf8::decode_fatal("\xEF\xBB\xBF{}"), "{}");
  EXPECT_EQ(routes::utf8::decode_fatal("\xEF\xBB\xBF\xEF\xBB\xBF{}"), "\xEF\xBB\xBF{}");
  EXPECT_EQ(routes::utf8::decode_fatal("{}\xEF\xBB\xBF"), "{}\xEF\xBB\xBF");
  EXPECT_EQ(routes::utf8::decode_fatal("\xF4\x8F\xBF\xBF"), "\xF4\x8F\xBF\xBF");  // U+10FFFF
  EXPECT_EQ(routes::utf8::decode_fatal("\xED\x9F\xBF"), "\xED\x9F\xBF");          // U+D7FF
  EXPECT_EQ(routes::utf8::decode_fatal("\0"s), "\0"s);
}

TEST(utf8, rejects_what_fatal_text_decoder_rejects) {
  for (const std::string& bad : {
           "\xC0\x80"s,                  // overlong NUL
           "\xC1\xBF"s,                  // overlong
           "\xE0\x80\xAF"s,              // overlong '/'
           "\xF0\x8F\xBF\xBF"s,          // overlong U+FFFF
           "\xED\xA0\x80"s,              // U+D800 encoded
           "\xED\xBF\xBF"s,              // U+DFFF encoded
           "\xF4\x90\x80\x80"s,          // U+110000
           "\xF5\x80\x80\x80"s,          // lead byte past F4
           "\xE2\x82"s,                  // truncated
           "{\"a\":\"\xF0\x9F\x98\"}"s,  // truncated inside a string
           "\x80"s,                      // stray continuation
           "\xFF"s,
       }) {
    EXPECT_FALSE(routes::utf8::decode_fatal(bad).has_value()) << testing::PrintToString(bad);
  }
}

// ---------------------------------------------------------------- JSON.parse

bool parses(std::string_view text) { return js::document::parse(text).has_value(); }

TEST(json_parse, accepts_what_json_parse_accepts) {
  for (const std::string_view ok : {
           R"({})",
           " \t\r\n{} \t\r\n",
           R"([])",
           "5",
           "-0",
           R"("s")",
           "null",
           "true",
           R"({"a":[1,2.5e3,-0.0,1E+2,1e-2,{"b":null}],"c":"\u0000\"\\\/\b\f\n\r\t"})",
           R"({"a":"\ud800"})",
           R"({"a":"\uDC00\uD800"})",
           R"({"":1})",
           "1e400",
           "123456789012345678901234567890",
       }) {
    EXPECT_TRUE(parses(ok)) << ok;
  }
}

TEST(json_parse, rejects_what_json_parse_rejects) {
  for (const std::string_view bad : {
           "",
           " ",
           R"({"a":1,})",
           R"([1,])",
           R"({"a":1}/**/)",
           "//\n{}",
           R"({"a":NaN})",
           "{'a':1}",
           R"({"a":01})",
           R"({"a":1.})",
           R"({"a":.5})",
           R"({"a":+1})",
           R"({"a":-})",
           R"({"a":1e})",
           R"({"a":Infinity})",
           R"({"a":"\x41"})",
           R"({"a":"\u12G4"})",
           "{\"a\":\"tab\there\"}",
           "{\"a\":\"nl\nhere\"}",
           R"({"a" 1})",
           R"({a:1})",
           "{}x",
           "{} {}",
           "\xC2\xA0{}",
           "\v{}",
           "\f{}",
           "\xEF\xBB\xBF{}",
           R"({"a":tru})",
           R"({"a":nul})",
           R"([1 2])",
           R"({"a":1 "b":2})",
           "[",
           "{",
           R"({"a")",
           R"(")",
       }) {
    EXPECT_FALSE(parses(bad)) << testing::PrintToString(std::string(bad));
  }
}

TEST(json_parse, deep_nesting_has_no_depth_limit) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_TRUE(parses(deep));
  EXPECT_FALSE(parses(std::string(200000, '[') + std::string(199999, ']')));
}

TEST(json_parse, duplicate_keys_last_wins) {
  const auto doc = js::document::parse(R"({"a":1,"b":2,"a":3})");
  ASSERT_TRUE(doc);
  const js::node* a = doc->member(doc->root(), "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->number, 3);
  EXPECT_EQ(doc->member(doc->root(), "missing"), nullptr);
}

TEST(json_parse, numbers_are_correctly_rounded_doubles) {
  const auto value = [](std::string_view literal) {
    const auto doc = js::document::parse(literal);
    EXPECT_TRUE(doc) << literal;
    return doc ? doc->root().number : std::nan("");
  };
  EXPECT_EQ(value("1e400"), kInf);
  EXPECT_EQ(value("-1e400"), -kInf);
  EXPECT_EQ(value("1e-400"), 0);
  EXPECT_TRUE(std::signbit(value("-0")));
  EXPECT_EQ(value("18446744073709551616"), 18446744073709551616.0);
  EXPECT_EQ(value("2.2250738585072011e-308"), 2.2250738585072011e-308);
  EXPECT_EQ(value("0.1"), 0.1);
  EXPECT_EQ(value("9007199254740993"), 9007199254740992.0);  // ties to even
}

TEST(json_parse, string_escapes_become_wtf8) {
  const auto text = [](std::string_view json) {
    const auto doc = js::document::parse(json);
    EXPECT_TRUE(doc) << json;
    return doc ? std::string(doc->text(doc->root())) : std::string();
  };
  EXPECT_EQ(text(R"("\u00e9\u20AC")"), "\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(text(R"("\ud83d\ude00")"), "\xF0\x9F\x98\x80");  // a pair joins
  EXPECT_EQ(text(R"("\ud83d")"), "\xED\xA0\xBD");            // a lone one stays (WTF-8)
  EXPECT_EQ(text(R"("\ude00\ud83d")"), "\xED\xB8\x80\xED\xA0\xBD");
  EXPECT_EQ(text(R"("\ud83dx")"), "\xED\xA0\xBDx");
  EXPECT_EQ(text(R"("\ud83d\u0041")"),
            "\xED\xA0\xBD"
            "A");
  EXPECT_EQ(text(R"("a\u0000b")"), "a\0b"s);
  EXPECT_EQ(text("\"raw \xF0\x9F\x98\x80 \x7f\""), "raw \xF0\x9F\x98\x80 \x7f");
}

// ---------------------------------------------------------------- trim, JSON.stringify

TEST(js_string, trim_uses_js_whitespace) {
  EXPECT_EQ(js::trim(" \t\n\v\f\r x y \r\n"), "x y");
  // NBSP, U+1680, U+2000, U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF
  EXPECT_EQ(js::trim("\xC2\xA0\xE1\x9A\x80\xE2\x80\x80\xE2\x80\x8A\xE2\x80\xA8x"
                     "\xE2\x80\xA9\xE2\x80\xAF\xE2\x81\x9F\xE3\x80\x80\xEF\xBB\xBF"),
            "x");
  // U+200B (zero width space) and U+180E are not JS whitespace.
  EXPECT_EQ(js::trim("\xE2\x80\x8Bx\xE1\xA0\x8E"), "\xE2\x80\x8Bx\xE1\xA0\x8E");
  EXPECT_EQ(js::trim("\xED\xA0\xBD "), "\xED\xA0\xBD");  // lone surrogates are kept
  EXPECT_EQ(js::trim(" \xC2\xA0 "), "");
}

TEST(js_string, json_quote_is_well_formed_stringify) {
  const auto quote = [](std::string_view s) {
    std::string out;
    js::append_json_quoted(out, s);
    return out;
  };
  EXPECT_EQ(quote("plain"), "\"plain\"");
  EXPECT_EQ(quote("\"\\/\b\f\n\r\t"), R"("\"\\/\b\f\n\r\t")");
  EXPECT_EQ(quote("\x01\x1f\x0b"s + '\0'), R"("\u0001\u001f\u000b\u0000")");
  EXPECT_EQ(quote("\xED\xA0\xBD|\xED\xBF\xBF"), R"("\ud83d|\udfff")");
  EXPECT_EQ(quote("\xE2\x80\xA8\xE2\x80\xA9\x7f\xF0\x9F\x98\x80<>&'"),
            "\"\xE2\x80\xA8\xE2\x80\xA9\x7f\xF0\x9F\x98\x80<>&'\"");
}

// ---------------------------------------------------------------- Number()

TEST(js_number, string_to_number) {
  struct row {
    std::string_view in;
    double out;
  };
  const std::string huge_hex = "0x" + std::string(256, 'f');  // >= 2^1024 - 2^970: overflows
  const row rows[] = {
      {"12", 12},
      {" 42 ", 42},
      {"", 0},
      {" \n\t ", 0},
      {"\xC2\xA0"
       "7\xE3\x80\x80",
       7},
      {"-3.5", -3.5},
      {"+3.5", 3.5},
      {".5", 0.5},
      {"5.", 5},
      {"1e3", 1000},
      {"1E+3", 1000},
      {"1e-3", 0.001},
      {"0x10", 16},
      {"0X1f", 31},
      {"0o17", 15},
      {"0O7", 7},
      {"0b101", 5},
      {"0B1", 1},
      {"Infinity", kInf},
      {"+Infinity", kInf},
      {"-Infinity", -kInf},
      {"1e21", 1e21},
      {"1e400", kInf},
      {"-1e400", -kInf},
      {"00012", 12},
      {"-0", -0.0},
      {"0x20000000000001", 9007199254740992.0},  // 2^53 + 1 rounds to even
      {huge_hex, kInf},
  };
  for (const row& r : rows) EXPECT_EQ(js::string_to_number(r.in), r.out) << r.in;
  for (const std::string_view nan : {
           "1_000",
           "0x",
           "0o",
           "0b",
           "0x1g",
           "0b2",
           "0o8",
           "-0x10",
           "+0x10",
           "1,2",
           "abc",
           "infinity",
           "inf",
           "NaN",
           "Infinityx",
           "1e",
           "1e+",
           ".",
           "+",
           "-",
           "e5",
           "..5",
           "5..",
           "1 2",
           "\xE2\x80\x8B"
           "1",
           "\xED\xA0\xBD",
           "0x1.8",
           "1d",
           "١",
       }) {
    EXPECT_TRUE(std::isnan(js::string_to_number(nan))) << nan;
  }
}

double number_of(std::string_view json_value) {
  const std::string text = "{\"v\":" + std::string(json_value) + "}";
  const auto doc = js::document::parse(text);
  EXPECT_TRUE(doc) << text;
  return doc ? js::to_number(*doc, doc->member(doc->root(), "v")) : std::nan("");
}

TEST(js_number, number_of_json_values) {
  EXPECT_EQ(number_of("5.5"), 5.5);
  EXPECT_EQ(number_of("null"), 0);
  EXPECT_EQ(number_of("true"), 1);
  EXPECT_EQ(number_of("false"), 0);
  EXPECT_EQ(number_of(R"(" 42 ")"), 42);
  EXPECT_EQ(number_of("[]"), 0);
  EXPECT_EQ(number_of("[7]"), 7);
  EXPECT_EQ(number_of("[[3]]"), 3);
  EXPECT_EQ(number_of("[[[]]]"), 0);
  EXPECT_EQ(number_of("[null]"), 0);
  EXPECT_EQ(number_of(R"([" 0x10 "])"), 16);
  EXPECT_EQ(number_of("[1e21]"), 1e21);  // "1e+21" parses back
  EXPECT_EQ(number_of("[0.1]"), 0.1);
  EXPECT_EQ(number_of("[1e400]"), kInf);  // "Infinity"
  EXPECT_TRUE(std::isnan(number_of("[1,2]")));
  EXPECT_TRUE(std::isnan(number_of("[[],[]]")));  // ","
  EXPECT_TRUE(std::isnan(number_of("[true]")));
  EXPECT_TRUE(std::isnan(number_of("[{}]")));
  EXPECT_TRUE(std::isnan(number_of("{}")));
  EXPECT_TRUE(std::isnan(number_of(R"({"valueOf":1})")));  // toString still works
  EXPECT_TRUE(std::isnan(number_of(R"("1_000")")));
  EXPECT_EQ(number_of("1e400"), kInf);
  const auto doc = js::document::parse("{}");
  ASSERT_TRUE(doc);
  EXPECT_TRUE(std::isnan(js::to_number(*doc, nullptr)));  // undefined
}

TEST(js_number, number_throws_where_to_primitive_throws) {
  EXPECT_THROW(number_of(R"({"toString":1})"), routes::js_error);
  EXPECT_THROW(number_of(R"({"toString":null,"valueOf":2})"), routes::js_error);
  EXPECT_THROW(number_of(R"([{"toString":"x"}])"), routes::js_error);
  EXPECT_THROW(number_of(R"([1,[2,{"toString":0}]])"), routes::js_error);
  EXPECT_NO_THROW(number_of(R"([{"a":{"toString":0}}])"));  // not reached by join
}

TEST(js_number, to_locale_string_en_us) {
  EXPECT_EQ(js::to_locale_string(0), "0");
  EXPECT_EQ(js::to_locale_string(999), "999");
  EXPECT_EQ(js::to_locale_string(1000), "1,000");
  EXPECT_EQ(js::to_locale_string(1234), "1,234");
  EXPECT_EQ(js::to_locale_string(100000), "100,000");
  EXPECT_EQ(js::to_locale_string(1234567), "1,234,567");
  EXPECT_EQ(js::to_locale_string(-1234), "-1,234");
}

// ---------------------------------------------------------------- zod email

TEST(zod_email, matches_the_zod323_regex) {
  for (const std::string_view ok : {
           "ari@example.com",
           "A.B-C_d+e'f@sub.Example.CO",
           "x@y.zz",
           "1@2.ab",
           "a-@b-.cd",
           "'a@b.cd",
           "a@1.2.3.ab",
           "_@a.bc",
           "+@a.bc",
           "-@a.bc",
       }) {
    EXPECT_TRUE(routes::is_zod_email(ok)) << ok;
  }
  for (const std::string_view bad : {
           "",
           "ari",
           "@example.com",
           "ari@",
           "ari@example",
           "ari@example.c",
           "ari@example.c0m",
           ".ari@example.com",
           "a..b@example.com",
           "ari.@example.com",
           "ari'@example.com",
           "ari@@example.com",
           "a@b@example.com",
           "ari@.example.com",
           "ari@example..com",
           "ari@-example.com",
           "ari@exa_mple.com",
           "ari @example.com",
           "ari@example.com ",
           "ari@example.com\n",
           "\xC3\xA9@example.com",
           "ari@\xC3\xA9xample.com",
           "ari@example.\xC5\xBF\xC5\xBF",  // U+017F folds to 'S' only with the u flag
           "a\"b@example.com",
           "ari@example.com.",
           "ari@exam ple.com",
       }) {
    EXPECT_FALSE(routes::is_zod_email(bad)) << testing::PrintToString(std::string(bad));
  }
}

// ---------------------------------------------------------------- /ssr

// The whole page for the reference benchmark's load-test body, written out by hand from React
// 18.3's rules.
const std::string kReferencePage =
    R"html(<!doctype html><html lang="en"><head><meta charSet="utf-8"/><meta name="viewport)html"
    R"html(" co)html"
    R"html(ntent="width=device-width, initial-scale=1"/><title>Ari - SSR Card</title><style)html"
    R"html(>)html"
    "\n"
    R"html(          body { margin: 0; font-family: ui-sans-serif, system-ui, sans-serif; b)html"
    R"html(ackg)html"
    R"html(round: #f7f8fa; color: #111827; })html"
    "\n"
    R"html(          main { min-height: 100vh; display: grid; place-items: center; padding:)html"
    R"html( 24p)html"
    R"html(x; })html"
    "\n"
    R"html(          article { width: min(680px, 100%); background: #fff; border: 1px solid)html"
    R"html( #e5)html"
    R"html(e7eb; border-radius: 16px; padding: 20px; })html"
    "\n"
    R"html(          h1 { margin: 0 0 8px; font-size: 1.4rem; })html"
    "\n"
    R"html(          p { margin: 0 0 10px; line-height: 1.45; })html"
    "\n"
    R"html(          .meta { color: #4b5563; font-size: 0.92rem; display: flex; gap: 12px; )html"
    R"html(flex)html"
    R"html(-wrap: wrap; })html"
    "\n"
    R"html(          .pill { display: inline-block; background: #eef2ff; color: #4338ca; bo)html"
    R"html(rder)html"
    R"html(-radius: 999px; padding: 4px 10px; font-weight: 600; })html"
    "\n"
    R"html(        </style></head><body><main><article><h1>Ari</h1><p>Building on Knitting<)html"
    R"html(/p><)html"
    R"html(div class="meta"><span class="pill">PRO<!-- --> plan</span><span>17<!-- --> proj)html"
    R"html(ects)html"
    R"html(</span><span>Rendered at <!-- -->2026-01-02T03:04:05.678Z</span></div></article>)html"
    R"html(</ma)html"
    R"html(in></body></html>)html";

// The page for arbitrary field values, built from the reference page so only the fields differ.
std::string page(std::string_view title, std::string_view h1, std::string_view bio,
                 std::string_view pill, std::string_view projects) {
  std::string p = kReferencePage;
  const auto swap = [&](std::string_view from, std::string_view to) {
    const std::size_t at = p.find(from);
    EXPECT_NE(at, std::string::npos);
    p.replace(at, from.size(), to);
  };
  swap("<title>Ari - SSR Card</title>", "<title>" + std::string(title) + " - SSR Card</title>");
  swap("<h1>Ari</h1>", "<h1>" + std::string(h1) + "</h1>");
  swap("<p>Building on Knitting</p>", "<p>" + std::string(bio) + "</p>");
  swap(">PRO<!--", ">" + std::string(pill) + "<!--");
  swap("<span>17<!--", "<span>" + std::string(projects) + "<!--");
  return p;
}
const std::string kDefaultPage = page("Anonymous", "Anonymous", "No bio yet.", "FREE", "0");

std::string ssr(std::string_view body) { return routes::render_ssr_page(body, kTs); }

// The text between `open` and the next `close` in the rendered page.
std::string field(const std::string& html, std::string_view open, std::string_view close) {
  const std::size_t a = html.find(open);
  if (a == std::string::npos) return "<missing>";
  const std::size_t b = html.find(close, a + open.size());
  return html.substr(a + open.size(), b - a - open.size());
}
std::string h1_of(std::string_view body) { return field(ssr(body), "<h1>", "</h1>"); }
std::string bio_of(std::string_view body) { return field(ssr(body), "<p>", "</p>"); }
std::string plan_of(std::string_view body) {
  return field(ssr(body), "<span class=\"pill\">", "<!--");
}
std::string projects_of(std::string_view body) {
  return field(ssr(body), "</span><span>", "<!-- --> projects");
}

TEST(ssr, reference_body_renders_the_exact_page) {
  EXPECT_EQ(ssr(R"({"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17})"),
            kReferencePage);
}

TEST(ssr, rendered_at_is_the_last_text_node) {
  EXPECT_NE(routes::render_ssr_page("{}", "1999-12-31T23:59:59.999Z")
                .find("<span>Rendered at <!-- -->1999-12-31T23:59:59.999Z</span></div>"),
            std::string::npos);
}

TEST(ssr, unusable_bodies_render_the_defaults) {
  for (const std::string& body : {
           ""s,
           "{}"s,
           "[]"s,
           "null"s,
           "5"s,
           R"("str")"s,
           "true"s,
           "{"s,
           R"({"name":"Ari",})"s,
           "\xC0\x80"s,
           "{\"name\":\"\xED\xA0\x80\"}"s,
           "{\"name\":\"Ari\xE2\x82\"}"s,
           "\xEF\xBB\xBF\xEF\xBB\xBF{\"name\":\"Ari\"}"s,
           R"([{"name":"Ari"}])"s,
       }) {
    EXPECT_EQ(ssr(body), kDefaultPage) << testing::PrintToString(body);
  }
}

TEST(ssr, leading_bom_is_stripped) { EXPECT_EQ(h1_of("\xEF\xBB\xBF{\"name\":\"Ari\"}"), "Ari"); }

TEST(ssr, name_and_bio_are_trimmed_strings_or_defaults) {
  EXPECT_EQ(h1_of(R"({"name":"  Ari  "})"), "Ari");
  EXPECT_EQ(h1_of(R"({"name":"\u00a0\u3000Ari\ufeff\u2028"})"), "Ari");
  EXPECT_EQ(h1_of(R"({"name":"\t\n\r\u000b\f "})"), "Anonymous");
  EXPECT_EQ(h1_of(R"({"name":""})"), "Anonymous");
  EXPECT_EQ(h1_of(R"({"name":5})"), "Anonymous");
  EXPECT_EQ(h1_of(R"({"name":null})"), "Anonymous");
  EXPECT_EQ(h1_of(R"({"name":["Ari"]})"), "Anonymous");
  EXPECT_EQ(h1_of(R"({"name":{"first":"Ari"}})"), "Anonymous");
  EXPECT_EQ(h1_of(R"({"name":"\u200bAri"})"),
            "\xE2\x80\x8B"
            "Ari");  // ZWSP is not trimmed
  EXPECT_EQ(h1_of(R"({"name":" A  r i "})"), "A  r i");
  EXPECT_EQ(bio_of(R"({"bio":"  hello\nworld  "})"), "hello\nworld");
  EXPECT_EQ(bio_of(R"({"bio":"   "})"), "No bio yet.");
  EXPECT_EQ(bio_of(R"({"bio":true})"), "No bio yet.");
  EXPECT_EQ(field(ssr(R"({"name":" Ari "})"), "<title>", "</title>"), "Ari - SSR Card");
}

TEST(ssr, plan_is_exactly_free_or_pro) {
  EXPECT_EQ(plan_of(R"({"plan":"pro"})"), "PRO");
  EXPECT_EQ(plan_of(R"({"plan":"free"})"), "FREE");
  EXPECT_EQ(plan_of(R"({"plan":"PRO"})"), "FREE");
  EXPECT_EQ(plan_of(R"({"plan":" pro"})"), "FREE");
  EXPECT_EQ(plan_of(R"({"plan":"pro "})"), "FREE");
  EXPECT_EQ(plan_of(R"({"plan":"enterprise"})"), "FREE");
  EXPECT_EQ(plan_of(R"({"plan":true})"), "FREE");
  EXPECT_EQ(plan_of(R"({"plan":["pro"]})"), "FREE");
  EXPECT_EQ(plan_of(R"({})"), "FREE");
}

TEST(ssr, projects_follow_number_floor_and_clamp) {
  struct row {
    std::string_view json;
    std::string_view shown;
  };
  const row rows[] = {
      {"17", "17"},
      {"1234", "1,234"},
      {"100000", "100,000"},
      {"100001", "100,000"},
      {"1234567", "100,000"},
      {"1e21", "100,000"},
      {"\"1e21\"", "100,000"},
      {"1e400", "0"},
      {"-1e400", "0"},
      {"\"Infinity\"", "0"},
      {"\"-Infinity\"", "0"},
      {"\"12\"", "12"},
      {"\" 42 \"", "42"},
      {"\"\"", "0"},
      {"\"   \"", "0"},
      {"null", "0"},
      {"true", "1"},
      {"false", "0"},
      {"[]", "0"},
      {"[7]", "7"},
      {"[[3]]", "3"},
      {"[null]", "0"},
      {"[1,2]", "0"},
      {"{}", "0"},
      {"\"0x10\"", "16"},
      {"\"0b11\"", "3"},
      {"\"0o10\"", "8"},
      {"\"1_000\"", "0"},
      {"\"0x\"", "0"},
      {"\"abc\"", "0"},
      {"-0.5", "0"},
      {"-1", "0"},
      {"-0", "0"},
      {"0.999", "0"},
      {"99.9", "99"},
      {"1999.5", "1,999"},
      {"\"5.\"", "5"},
      {"\".5\"", "0"},
      {"\"1e3\"", "1,000"},
      {"[\"2500\"]", "2,500"},
      {"[1e21]", "100,000"},
      {"99999.99999999999", "99,999"},
      {"\"0x186A0\"", "100,000"},
  };
  for (const row& r : rows) {
    const std::string body = "{\"projects\":" + std::string(r.json) + "}";
    EXPECT_EQ(projects_of(body), r.shown) << body;
  }
  EXPECT_EQ(projects_of("{}"), "0");  // undefined -> NaN -> default
}

TEST(ssr, hostile_text_is_escaped_like_react) {
  const std::string hostile = R"(<script>alert('x')&"</script>)";
  const std::string escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&amp;&quot;&lt;/script&gt;";
  const std::string body = R"({"name":"<script>alert('x')&\"</script>","bio":)"
                           R"("<script>alert('x')&\"</script>","plan":"pro","projects":1})";
  EXPECT_EQ(ssr(body), page(escaped, escaped, escaped, "PRO", "1"));
  EXPECT_EQ(ssr(body).find(hostile), std::string::npos);
}

TEST(ssr, other_characters_pass_through_unescaped) {
  EXPECT_EQ(h1_of(R"({"name":"a/b\\c`d=e{f}"})"), "a/b\\c`d=e{f}");
  EXPECT_EQ(h1_of(R"({"name":"x\u0000y"})"), "x\0y"s);
  EXPECT_EQ(h1_of(R"({"name":"\u00e9 \ud83d\ude00"})"), "\xC3\xA9 \xF0\x9F\x98\x80");
}

TEST(ssr, lone_surrogates_are_written_as_replacement_characters) {
  EXPECT_EQ(h1_of(R"({"name":"a\ud800b"})"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(bio_of(R"({"bio":"\udfff\ud83d"})"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(field(ssr(R"({"name":"\ud800"})"), "<title>", "</title>"), "\xEF\xBF\xBD - SSR Card");
}

TEST(ssr, duplicate_keys_last_wins) {
  EXPECT_EQ(h1_of(R"({"name":"A","name":"B"})"), "B");
  EXPECT_EQ(projects_of(R"({"projects":5,"projects":"x"})"), "0");
}

TEST(ssr, unknown_keys_and_deep_values_are_ignored) {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  EXPECT_EQ(h1_of(R"({"other":)" + deep + R"(,"name":"Ari","__proto__":{"name":"x"}})"), "Ari");
}

TEST(ssr, throws_where_the_reference_throws) {
  EXPECT_THROW(ssr(R"({"projects":{"toString":1}})"), routes::js_error);
  EXPECT_THROW(ssr(R"({"projects":[1,{"toString":0}]})"), routes::js_error);
  EXPECT_NO_THROW(ssr(R"({"projects":{"valueOf":1}})"));
  EXPECT_NO_THROW(ssr(R"({"name":{"toString":1}})"));
}

// ---------------------------------------------------------------- /jwt

constexpr std::int64_t kNow = 1700000000;
constexpr std::string_view kSecret = "hello";
constexpr std::string_view kReferenceJwtBody =
    R"({"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900})";

std::string base64url_decode(std::string_view in) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '-') v = 62;
    if (c == '_') v = 63;
    EXPECT_NE(v, -1) << "not base64url: " << c;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

std::string base64url_of(const unsigned char* data, std::size_t n) {
  static constexpr char kA[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  for (std::size_t i = 0; i < n; i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(data[i]) << 16;
    if (i + 1 < n) v |= static_cast<std::uint32_t>(data[i + 1]) << 8;
    if (i + 2 < n) v |= data[i + 2];
    out += kA[(v >> 18) & 63];
    out += kA[(v >> 12) & 63];
    if (i + 1 < n) out += kA[(v >> 6) & 63];
    if (i + 2 < n) out += kA[v & 63];
  }
  return out;
}

struct decoded_jwt {
  std::string header;
  std::string payload;
  bool signature_ok = false;
  std::string token;
};

// Splits {"ok":true,"token":"H.P.S",...}, decodes H and P, and checks S with OpenSSL's
// one-shot HMAC(), independently of the route's EVP_MAC context.
decoded_jwt decode(const std::string& response, std::string_view secret) {
  decoded_jwt d;
  const std::string prefix = R"({"ok":true,"token":")";
  EXPECT_EQ(response.compare(0, prefix.size(), prefix), 0) << response;
  const std::size_t end = response.find('"', prefix.size());
  d.token = response.substr(prefix.size(), end - prefix.size());
  const std::size_t dot1 = d.token.find('.');
  const std::size_t dot2 = d.token.find('.', dot1 + 1);
  EXPECT_NE(dot2, std::string::npos);
  d.header = base64url_decode(d.token.substr(0, dot1));
  d.payload = base64url_decode(d.token.substr(dot1 + 1, dot2 - dot1 - 1));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  const std::string signing_input = d.token.substr(0, dot2);
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &mac_len);
  d.signature_ok = d.token.substr(dot2 + 1) == base64url_of(mac, mac_len);
  return d;
}

std::optional<std::string> jwt(std::string_view body) {
  return routes::issue_jwt(body, kSecret, kNow);
}

std::string payload_of(std::string_view body) {
  const auto response = jwt(body);
  EXPECT_TRUE(response) << body;
  return response ? decode(*response, kSecret).payload : std::string();
}

TEST(jwt, reference_body_gives_the_exact_response) {
  const auto response = jwt(kReferenceJwtBody);
  ASSERT_TRUE(response);
  // Token computed independently (Python hmac/base64) for secret "hello", iat 1700000000.
  EXPECT_EQ(*response,
            R"({"ok":true,"token":"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.)"
            R"(eyJzdWIiOiJ1XzQyIiwiZW1haWwiOiJhcmlAZXhhbXBsZS5jb20iLCJyb2xlIjoiYWRtaW4iLCJp)"
            R"(YXQiOjE3MDAwMDAwMDAsImV4cCI6MTcwMDAwMDkwMH0.)"
            R"(JYoyaGRaSuJGyV7wXt75BvptB0V2EpQmA2L9ChfGV9o","sub":"u_42","exp":1700000900})");
  const decoded_jwt d = decode(*response, kSecret);
  EXPECT_EQ(d.header, R"({"alg":"HS256","typ":"JWT"})");
  EXPECT_EQ(d.payload, R"({"sub":"u_42","email":"ari@example.com","role":"admin",)"
                       R"("iat":1700000000,"exp":1700000900})");
  EXPECT_TRUE(d.signature_ok);
}

TEST(jwt, email_dropped_when_absent_and_role_defaults_to_member) {
  EXPECT_EQ(payload_of(R"({"user":{"id":"u1"}})"),
            R"({"sub":"u1","role":"member","iat":1700000000,"exp":1700000900})");
  EXPECT_EQ(payload_of(R"({"user":{"id":"u1","email":"a@b.co"}})"),
            R"({"sub":"u1","email":"a@b.co","role":"member","iat":1700000000,"exp":1700000900})");
  EXPECT_EQ(payload_of(R"({"user":{"role":"r","id":"u1"}})"),
            R"({"sub":"u1","role":"r","iat":1700000000,"exp":1700000900})");
}

TEST(jwt, unknown_keys_are_stripped) {
  EXPECT_EQ(payload_of(R"({"x":1,"user":{"id":"u1","admin":true,"role":"r"},"extra":[1]})"),
            R"({"sub":"u1","role":"r","iat":1700000000,"exp":1700000900})");
}

TEST(jwt, ttl_follows_number_floor_and_clamp) {
  struct row {
    std::string_view ttl;  // JSON value, or empty for absent
    std::int64_t seconds;
  };
  const row rows[] = {
      {"", 900},       {"900", 900},   {"60", 60},         {"30", 30},       {"29", 30},
      {"10", 30},      {"-5", 30},     {"86400", 86400},   {"86401", 86400}, {"100000", 86400},
      {"45.9", 45},    {"\"60\"", 60}, {"\" 120 \"", 120}, {"null", 30},     {"true", 30},
      {"false", 30},   {"\"\"", 30},   {"\"abc\"", 900},   {"1e400", 900},   {"\"Infinity\"", 900},
      {"[120]", 120},  {"[]", 30},     {"[1,2]", 900},     {"{}", 900},      {"\"0x3c\"", 60},
      {"1e21", 86400},
  };
  for (const row& r : rows) {
    const std::string body = r.ttl.empty()
                                 ? R"({"user":{"id":"u"}})"
                                 : R"({"user":{"id":"u"},"ttlSec":)" + std::string(r.ttl) + "}";
    const auto response = jwt(body);
    ASSERT_TRUE(response) << body;
    const std::string exp = std::to_string(kNow + r.seconds);
    EXPECT_EQ(decode(*response, kSecret).payload,
              R"({"sub":"u","role":"member","iat":1700000000,"exp":)" + exp + "}")
        << body;
    EXPECT_TRUE(response->ends_with(R"(,"exp":)" + exp + "}")) << body;
  }
}

TEST(jwt, bad_requests_give_nullopt) {
  for (const std::string& body : {
           ""s,
           "{"s,
           "[]"s,
           "null"s,
           "5"s,
           R"("str")"s,
           "{}"s,
           R"({"user":null})"s,
           R"({"user":[]})"s,
           R"({"user":"u_42"})"s,
           R"({"user":{}})"s,
           R"({"user":{"id":""}})"s,
           R"({"user":{"id":5}})"s,
           R"({"user":{"id":null}})"s,
           R"({"user":{"id":["u"]}})"s,
           R"({"user":{"id":"u","email":"nope"}})"s,
           R"({"user":{"id":"u","email":null}})"s,
           R"({"user":{"id":"u","email":""}})"s,
           R"({"user":{"id":"u","email":5}})"s,
           R"({"user":{"id":"u","role":""}})"s,
           R"({"user":{"id":"u","role":null}})"s,
           R"({"user":{"id":"u","role":7}})"s,
           R"({"User":{"id":"u"}})"s,
           "{\"user\":{\"id\":\"\xC0\x80\"}}"s,
           "\xEF\xBB\xBF\xEF\xBB\xBF{\"user\":{\"id\":\"u\"}}"s,
           R"({"user":{"id":"u"},})"s,
       }) {
    EXPECT_FALSE(jwt(body).has_value()) << testing::PrintToString(body);
  }
  EXPECT_TRUE(jwt("\xEF\xBB\xBF{\"user\":{\"id\":\"u\"}}").has_value());  // one BOM is fine
  EXPECT_TRUE(jwt(R"({"user":{"id":" "}})").has_value());                 // min(1) does not trim
}

TEST(jwt, strings_are_json_stringify_escaped) {
  const auto response =
      jwt(R"({"user":{"id":"a\"b\\c\n\u0001\u2028\ud800\ud83d\ude00","role":"<&>"}})");
  ASSERT_TRUE(response);
  const std::string sub = "\"a\\\"b\\\\c\\n\\u0001\xE2\x80\xA8\\ud800\xF0\x9F\x98\x80\"";
  EXPECT_TRUE(response->ends_with(",\"sub\":" + sub + ",\"exp\":1700000900}")) << *response;
  const decoded_jwt d = decode(*response, kSecret);
  EXPECT_EQ(d.payload,
            "{\"sub\":" + sub + ",\"role\":\"<&>\",\"iat\":1700000000,\"exp\":1700000900}");
  EXPECT_TRUE(d.signature_ok);
}

TEST(jwt, secrets_are_kept_per_thread_and_re_keyed) {
  for (const std::string_view secret : {"hello", "other", "hello",
                                        "a much longer secret "
                                        "that exceeds the sixty-four byte SHA-256 block size!!"}) {
    const auto response = routes::issue_jwt(kReferenceJwtBody, secret, kNow);
    ASSERT_TRUE(response);
    EXPECT_TRUE(decode(*response, secret).signature_ok) << secret;
  }
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ok] {
      const std::string secret = "secret-" + std::to_string(t % 2);
      int good = 0;
      for (int i = 0; i < 200; ++i) {
        const auto response = routes::issue_jwt(kReferenceJwtBody, secret, kNow + i);
        if (response && decode(*response, secret).signature_ok) ++good;
      }
      ok[t] = good;
    });
  }
  for (auto& th : threads) th.join();
  for (const int good : ok) EXPECT_EQ(good, 200);
}

TEST(jwt, throws_where_the_reference_throws) {
  // WebCrypto refuses an empty HMAC key, but only valid bodies get as far as signing.
  EXPECT_THROW(routes::issue_jwt(kReferenceJwtBody, "", kNow), routes::js_error);
  EXPECT_FALSE(routes::issue_jwt("{}", "", kNow).has_value());
  // zod runs ttlSec's preprocess even when user already failed.
  EXPECT_THROW(jwt(R"({"user":{"id":"u"},"ttlSec":{"toString":1}})"), routes::js_error);
  EXPECT_THROW(jwt(R"({"ttlSec":[{"toString":1}]})"), routes::js_error);
  EXPECT_FALSE(jwt(R"({"ttlSec":{"valueOf":1}})").has_value());
}

// ---------------------------------------------------------------- cost emulation

TEST(cost, burns_at_least_the_requested_thread_cpu_time) {
  const std::uint64_t start = routes::thread_cpu_ns();
  EXPECT_GT(start, 0u);
  static_cast<void>(routes::burn_cpu_until(start, 2000));
  EXPECT_GE(routes::thread_cpu_ns() - start, 2'000'000u);
}

TEST(cost, zero_cost_returns_at_once_and_result_depends_on_the_work) {
  const std::uint64_t now = routes::thread_cpu_ns();
  EXPECT_EQ(routes::burn_cpu_until(now, 0), routes::burn_cpu_until(now, 0));
  EXPECT_NE(routes::burn_cpu_until(routes::thread_cpu_ns(), 50), now ^ 0x9E3779B97F4A7C15ULL);
}

}  // namespace
