// POST /ssr: the reference route's zod normalisation of the body, then React 18.3's renderToString
// of UserCard, byte for byte, written as fixed chunks around the escaped user text.
//
// How React 18.3.1 (react-dom-server-legacy, the renderer behind renderToString) writes this
// tree, and so why each chunk below looks the way it does:
// - No "<!DOCTYPE html>" from React: renderToString starts in HTML_MODE rather than
//   ROOT_HTML_MODE precisely so that <html> emits no doctype; the "<!doctype html>" comes from
//   the reference route's template string. No data-reactroot, no preload links, nothing after
// </html>.
// - Attributes keep their JSX order. className becomes class (DOMProperty's alias table), but
//   charSet has no alias and is written as "charSet" (the same <meta charSet="utf-8"/> that
//   Next.js pages show). Void elements close with "/>", others with an explicit end tag.
// - Text goes through escapeTextForBrowser: & < > " ' -> &amp; &lt; &gt; &quot; &#x27;.
//   That includes the <style> text (React 18 treats style as a generic element); the CSS
//   literal contains none of those characters, so escaping it would change nothing.
// - A lone string child (<h1>{name}</h1>, <title>{`...`}</title>, the style literal) is
//   written bare. Adjacent text children are separated by "<!-- -->" (textSeparator; since
//   18.2 only between two texts in a row), e.g. {plan.toUpperCase()} plan -> "PRO<!-- --> plan".
// - JSX drops the whitespace-only lines between tags, so the markup has no newlines except
//   those inside the CSS template literal, copied here from the .tsx exactly.
#include "js_json.hpp"
#include "js_number.hpp"
#include "js_string.hpp"
#include "routes.hpp"
#include "utf8.hpp"

#include <cmath>

namespace knit_server::routes {

namespace {

struct ssr_input {
  std::string_view name;  // WTF-8 (may point into the parsed document)
  std::string_view plan;  // "free" or "pro"
  std::string_view bio;
  std::int64_t projects;  // 0..100000
};

// z.preprocess(v => typeof v === "string" && v.trim() !== "" ? v.trim() : undefined, ...)
// followed by `?? fallback`.
std::string_view trimmed_or(const js::document& doc, const js::node* v, std::string_view fallback) {
  if (v == nullptr || v->type != js::kind::string) return fallback;
  const std::string_view t = js::trim(doc.text(*v));
  return t.empty() ? fallback : t;
}

// Number(v); finite -> Math.max(0, Math.min(100_000, Math.floor(n))), else undefined -> 0.
std::int64_t normalised_projects(const js::document& doc, const js::node* v) {
  const double n = js::to_number(doc, v);
  if (!std::isfinite(n)) return 0;
  return static_cast<std::int64_t>(std::fmax(0.0, std::fmin(100'000.0, std::floor(n))));
}

ssr_input normalise(const std::optional<js::document>& doc) {
  ssr_input in{"Anonymous", "free", "No bio yet.", 0};
  // The reference route validates {} when the body is not a JSON object, which yields the defaults.
  if (!doc || doc->root().type != js::kind::object) return in;
  const js::node& root = doc->root();
  in.name = trimmed_or(*doc, doc->member(root, "name"), "Anonymous");
  const js::node* plan = doc->member(root, "plan");
  if (plan != nullptr && plan->type == js::kind::string &&
      (doc->text(*plan) == "free" || doc->text(*plan) == "pro")) {
    in.plan = doc->text(*plan);
  }
  in.bio = trimmed_or(*doc, doc->member(root, "bio"), "No bio yet.");
  in.projects = normalised_projects(*doc, doc->member(root, "projects"));
  return in;
}

// React's escapeTextForBrowser, then the body's UTF-8 encoding (lone surrogates -> U+FFFD).
void append_escaped_text(std::string& out, std::string_view wtf8) {
  std::size_t run_start = 0;
  const auto flush = [&](std::size_t end) {
    utf8::append_well_formed(out, wtf8.substr(run_start, end - run_start));
  };
  for (std::size_t i = 0; i < wtf8.size(); ++i) {
    const char* entity = nullptr;
    switch (wtf8[i]) {
      case '"': entity = "&quot;"; break;
      case '&': entity = "&amp;"; break;
      case '\'': entity = "&#x27;"; break;
      case '<': entity = "&lt;"; break;
      case '>': entity = "&gt;"; break;
      default: continue;
    }
    flush(i);
    out += entity;
    run_start = i + 1;
  }
  flush(wtf8.size());
}

constexpr std::string_view kHead =
    "<!doctype html><html lang=\"en\"><head><meta charSet=\"utf-8\"/>"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/><title>";

// The <style> child: the template literal of hono_componets_ssr.tsx, newlines and indentation
// included (10 spaces before each rule, 8 before the closing backtick).
constexpr std::string_view kStyle =
    "</title><style>\n"
    "          body { margin: 0; font-family: ui-sans-serif, system-ui, sans-serif; "
    "background: #f7f8fa; color: #111827; }\n"
    "          main { min-height: 100vh; display: grid; place-items: center; padding: 24px; }\n"
    "          article { width: min(680px, 100%); background: #fff; border: 1px solid #e5e7eb; "
    "border-radius: 16px; padding: 20px; }\n"
    "          h1 { margin: 0 0 8px; font-size: 1.4rem; }\n"
    "          p { margin: 0 0 10px; line-height: 1.45; }\n"
    "          .meta { color: #4b5563; font-size: 0.92rem; display: flex; gap: 12px; "
    "flex-wrap: wrap; }\n"
    "          .pill { display: inline-block; background: #eef2ff; color: #4338ca; "
    "border-radius: 999px; padding: 4px 10px; font-weight: 600; }\n"
    "        </style></head><body><main><article><h1>";

}  // namespace

std::string render_ssr_page(std::string_view body, std::string_view rendered_at) {
  // TextDecoder failure leaves "" -> JSON.parse throws -> defaults; so does any non-object.
  const std::optional<std::string_view> text = utf8::decode_fatal(body);
  const std::optional<js::document> doc =
      text ? js::document::parse(*text) : std::optional<js::document>{};
  const ssr_input user = normalise(doc);

  std::string out;
  out.reserve(kHead.size() + kStyle.size() + 2 * user.name.size() + user.bio.size() + 300);
  out += kHead;
  append_escaped_text(out, user.name);  // `${user.name} - SSR Card`: one text node
  out += " - SSR Card";
  out += kStyle;
  append_escaped_text(out, user.name);
  out += "</h1><p>";
  append_escaped_text(out, user.bio);
  out += "</p><div class=\"meta\"><span class=\"pill\">";
  out += user.plan == "pro" ? "PRO" : "FREE";  // user.plan.toUpperCase()
  out += "<!-- --> plan</span><span>";
  out += js::to_locale_string(user.projects);
  out += "<!-- --> projects</span><span>Rendered at <!-- -->";
  append_escaped_text(out, rendered_at);
  out += "</span></div></article></main></body></html>";
  return out;
}

}  // namespace knit_server::routes
