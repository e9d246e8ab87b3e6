// The zod email regex, unrolled: it has a single '@' and an unambiguous split, so no backtracking.
#include "email.hpp"

namespace knit_server::routes {

namespace {

bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

}  // namespace

bool is_zod_email(std::string_view s) {
  // No class in the pattern admits '@', so the match needs exactly one and splits there.
  const std::size_t at = s.find('@');
  if (at == std::string_view::npos || s.find('@', at + 1) != std::string_view::npos) return false;
  const std::string_view local = s.substr(0, at);
  const std::string_view domain = s.substr(at + 1);

  // ([A-Z0-9_'+\-\.]*)[A-Z0-9_+-] : one or more of the wide class, the last one not '.' or '\''.
  if (local.empty()) return false;
  for (const char c : local) {
    if (!(is_alnum(c) || c == '_' || c == '\'' || c == '+' || c == '-' || c == '.')) return false;
  }
  const char last = local.back();
  if (last == '.' || last == '\'') return false;
  // (?!\.) and (?!.*\.\.): the pattern allows no line terminators, so '.*' spans the whole
  // string and the lookahead simply forbids ".." anywhere. The domain below cannot hold "..",
  // and '@' separates the two halves, so checking the local part suffices.
  if (local.front() == '.' || local.find("..") != std::string_view::npos) return false;

  // ([A-Z0-9][A-Z0-9\-]*\.)+[A-Z]{2,} : labels cannot contain '.', so the dots fix the split:
  // at least one label before the last dot, and letters only (two or more) after it.
  const std::size_t last_dot = domain.rfind('.');
  if (last_dot == std::string_view::npos) return false;
  const std::string_view tld = domain.substr(last_dot + 1);
  if (tld.size() < 2) return false;
  for (const char c : tld) {
    if (!is_alpha(c)) return false;
  }
  std::string_view labels = domain.substr(0, last_dot);  // "a.b" of "a.b.tld"
  for (;;) {
    const std::size_t dot = labels.find('.');
    const std::string_view label = labels.substr(0, dot);
    if (label.empty() || !is_alnum(label.front())) return false;
    for (const char c : label) {
      if (!(is_alnum(c) || c == '-')) return false;
    }
    if (dot == std::string_view::npos) break;
    labels.remove_prefix(dot + 1);
  }
  return true;
}

}  // namespace knit_server::routes
