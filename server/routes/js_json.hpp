// JSON.parse with the exact ECMAScript semantics, into a flat read-only tree.
//
// Why not Boost.JSON (1.81): it rejects "\ud800" (valid in JS: a lone surrogate), stops at a
// nesting depth of 32 by default where JS has no limit, and its default number parsing is not
// correctly rounded (2.2250738585072011e-308 comes out 1 ulp off), while JS rounds correctly
// and turns 1e400 into Infinity. Any of those changes what the routes answer.
//
// The parser is iterative and the tree is one vector of trivially destructible nodes plus one
// string arena, so a hostile body of 100k nested '[' costs memory, never stack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace knit_server::routes::js {

enum class kind : std::uint8_t { null, boolean, number, string, array, object };

struct node {
  static constexpr std::uint32_t npos = UINT32_MAX;

  kind type = kind::null;
  bool boolean = false;
  double number = 0;
  // String value (kind::string) and member name (when the parent is an object), both WTF-8,
  // as offset/length into document's arena.
  std::uint32_t text_offset = 0;
  std::uint32_t text_length = 0;
  std::uint32_t key_offset = 0;
  std::uint32_t key_length = 0;
  // Children of an array or object, in source order, as a singly linked list of indices.
  std::uint32_t first_child = npos;
  std::uint32_t next_sibling = npos;
  std::uint32_t size = 0;
};

class document {
 public:
  // `JSON.parse(text)` where text is the (valid UTF-8) decoded body; nullopt where JS throws.
  static std::optional<document> parse(std::string_view text);

  const node& root() const { return nodes_.front(); }

  // `object[key]` for an own data property: the last member with that name (JSON.parse lets
  // later duplicates overwrite earlier ones), or nullptr for undefined.
  const node* member(const node& object, std::string_view key) const;

  std::string_view text(const node& n) const;  // kind::string value
  std::string_view key(const node& n) const;   // member name
  const node* first_child(const node& n) const { return at(n.first_child); }
  const node* next_sibling(const node& n) const { return at(n.next_sibling); }

 private:
  const node* at(std::uint32_t index) const {
    return index == node::npos ? nullptr : &nodes_[index];
  }

  std::vector<node> nodes_;
  std::string arena_;

  friend class parser;
};

}  // namespace knit_server::routes::js
