// JSON.parse (ECMA-262 25.5.1 / ECMA-404 grammar) into js::document, without recursion.
#include "js_json.hpp"

#include "js_number.hpp"
#include "utf8.hpp"

namespace knit_server::routes::js {

class parser {
 public:
  parser(std::string_view text, document& doc) : s_(text), doc_(doc) {}

  bool run();

 private:
  // An array or object whose closing bracket has not been seen yet.
  struct open_container {
    std::uint32_t index;
    std::uint32_t last_child;
  };

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return s_[pos_]; }
  // JSON whitespace is only these four; JS's wider set (NBSP, U+FEFF, ...) is a SyntaxError.
  void skip_whitespace() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
      ++pos_;
    }
  }
  std::uint32_t add_node(kind type);
  bool parse_member_name();
  bool parse_string(std::uint32_t& offset, std::uint32_t& length);
  bool parse_hex4(char32_t& unit);
  bool parse_number(double& value);
  bool parse_literal(std::string_view word);

  std::string_view s_;
  std::size_t pos_ = 0;
  document& doc_;
  std::vector<open_container> stack_;
  // Name of the member whose value is parsed next (only meaningful inside an object).
  std::uint32_t key_offset_ = 0;
  std::uint32_t key_length_ = 0;
};

std::uint32_t parser::add_node(kind type) {
  auto& nodes = doc_.nodes_;
  const auto index = static_cast<std::uint32_t>(nodes.size());
  nodes.push_back(node{});
  nodes[index].type = type;
  if (!stack_.empty()) {
    open_container& top = stack_.back();
    node& parent = nodes[top.index];
    if (parent.type == kind::object) {
      nodes[index].key_offset = key_offset_;
      nodes[index].key_length = key_length_;
    }
    if (top.last_child == node::npos) {
      parent.first_child = index;
    } else {
      nodes[top.last_child].next_sibling = index;
    }
    top.last_child = index;
    ++parent.size;
  }
  return index;
}

bool parser::parse_member_name() {
  if (at_end() || peek() != '"') return false;
  if (!parse_string(key_offset_, key_length_)) return false;
  skip_whitespace();
  if (at_end() || peek() != ':') return false;
  ++pos_;
  skip_whitespace();
  return true;
}

bool parser::parse_hex4(char32_t& unit) {
  if (s_.size() - pos_ < 4) return false;
  unit = 0;
  for (int k = 0; k < 4; ++k) {
    const char c = s_[pos_ + k];
    unit <<= 4;
    if (c >= '0' && c <= '9') {
      unit |= static_cast<char32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      unit |= static_cast<char32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      unit |= static_cast<char32_t>(c - 'A' + 10);
    } else {
      return false;
    }
  }
  pos_ += 4;
  return true;
}

bool parser::parse_string(std::uint32_t& offset, std::uint32_t& length) {
  std::string& arena = doc_.arena_;
  ++pos_;  // opening quote
  const std::size_t start = arena.size();
  for (;;) {
    const std::size_t run_start = pos_;
    while (!at_end()) {
      const auto c = static_cast<unsigned char>(peek());
      if (c == '"' || c == '\\' || c < 0x20) break;
      ++pos_;
    }
    // Raw bytes are valid UTF-8 already (decode_fatal ran first), so they copy as they are.
    arena.append(s_.substr(run_start, pos_ - run_start));
    if (at_end()) return false;
    const char c = peek();
    if (c == '"') {
      ++pos_;
      break;
    }
    if (c != '\\') return false;  // an unescaped control character
    ++pos_;
    if (at_end()) return false;
    const char escape = s_[pos_++];
    switch (escape) {
      case '"': arena += '"'; break;
      case '\\': arena += '\\'; break;
      case '/': arena += '/'; break;
      case 'b': arena += '\b'; break;
      case 'f': arena += '\f'; break;
      case 'n': arena += '\n'; break;
      case 'r': arena += '\r'; break;
      case 't': arena += '\t'; break;
      case 'u': {
        char32_t unit = 0;
        if (!parse_hex4(unit)) return false;
        // A high surrogate escape directly followed by a low one is one code point in the JS
        // string; anything else leaves it unpaired, which JS allows.
        if (unit >= 0xD800 && unit <= 0xDBFF && s_.substr(pos_).starts_with("\\u")) {
          const std::size_t save = pos_;
          pos_ += 2;
          char32_t low = 0;
          if (parse_hex4(low) && low >= 0xDC00 && low <= 0xDFFF) {
            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
          } else {
            pos_ = save;  // not a pair: the next escape is parsed on its own
          }
        }
        utf8::append(arena, unit);
        break;
      }
      default: return false;
    }
  }
  offset = static_cast<std::uint32_t>(start);
  length = static_cast<std::uint32_t>(arena.size() - start);
  return true;
}

bool parser::parse_number(double& value) {
  const std::size_t start = pos_;
  const auto digit = [&] { return !at_end() && peek() >= '0' && peek() <= '9'; };
  if (peek() == '-') ++pos_;
  if (at_end()) return false;
  if (peek() == '0') {
    ++pos_;  // no leading zeros: "01" fails at the caller on the stray '1'
  } else if (digit()) {
    while (digit()) ++pos_;
  } else {
    return false;
  }
  if (!at_end() && peek() == '.') {
    ++pos_;
    if (!digit()) return false;
    while (digit()) ++pos_;
  }
  if (!at_end() && (peek() == 'e' || peek() == 'E')) {
    ++pos_;
    if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
    if (!digit()) return false;
    while (digit()) ++pos_;
  }
  value = decimal_literal_value(s_.substr(start, pos_ - start));
  return true;
}

bool parser::parse_literal(std::string_view word) {
  if (!s_.substr(pos_).starts_with(word)) return false;
  pos_ += word.size();
  return true;
}

bool parser::run() {
  skip_whitespace();
  for (;;) {
    // A value starts here.
    if (at_end()) return false;
    const char c = peek();
    bool opened = false;
    switch (c) {
      case '{': {
        const std::uint32_t index = add_node(kind::object);
        ++pos_;
        skip_whitespace();
        if (!at_end() && peek() == '}') {
          ++pos_;
        } else {
          stack_.push_back({index, node::npos});
          if (!parse_member_name()) return false;
          opened = true;
        }
        break;
      }
      case '[': {
        const std::uint32_t index = add_node(kind::array);
        ++pos_;
        skip_whitespace();
        if (!at_end() && peek() == ']') {
          ++pos_;
        } else {
          stack_.push_back({index, node::npos});
          opened = true;
        }
        break;
      }
      case '"': {
        // Parse before add_node: the pending member name must not be overwritten first.
        std::uint32_t offset = 0;
        std::uint32_t length = 0;
        if (!parse_string(offset, length)) return false;
        const std::uint32_t index = add_node(kind::string);
        doc_.nodes_[index].text_offset = offset;
        doc_.nodes_[index].text_length = length;
        break;
      }
      case 't':
      case 'f': {
        if (!parse_literal(c == 't' ? "true" : "false")) return false;
        doc_.nodes_[add_node(kind::boolean)].boolean = (c == 't');
        break;
      }
      case 'n':
        if (!parse_literal("null")) return false;
        add_node(kind::null);
        break;
      default: {
        double value = 0;
        if (!parse_number(value)) return false;
        doc_.nodes_[add_node(kind::number)].number = value;
        break;
      }
    }
    if (opened) continue;

    // A value ended: close containers until one continues with ','.
    for (;;) {
      skip_whitespace();
      if (stack_.empty()) return at_end();
      if (at_end()) return false;
      const bool in_object = doc_.nodes_[stack_.back().index].type == kind::object;
      const char next = peek();
      if (next == ',') {
        ++pos_;
        skip_whitespace();
        if (in_object && !parse_member_name()) return false;
        break;
      }
      if (next != (in_object ? '}' : ']')) return false;
      ++pos_;
      stack_.pop_back();
    }
  }
}

std::optional<document> document::parse(std::string_view text) {
  // Offsets are 32-bit; bodies that large never reach a route (the server caps bodies far lower).
  if (text.size() >= UINT32_MAX / 4) return std::nullopt;
  document doc;
  parser p(text, doc);
  if (!p.run()) return std::nullopt;
  return doc;
}

const node* document::member(const node& object, std::string_view name) const {
  const node* found = nullptr;
  for (const node* child = first_child(object); child != nullptr; child = next_sibling(*child)) {
    if (key(*child) == name) found = child;
  }
  return found;
}

std::string_view document::text(const node& n) const {
  return std::string_view(arena_).substr(n.text_offset, n.text_length);
}

std::string_view document::key(const node& n) const {
  return std::string_view(arena_).substr(n.key_offset, n.key_length);
}

}  // namespace knit_server::routes::js
