// Writes Boost.JSON values as compact, human-readable JSON (plain decimals, not 2.8151E3).
#include "driver/run/json_write.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace knit::bench {
namespace {

void write_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  out += s;
}

void write(std::string& out, const boost::json::value& v, int indent, int depth) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: out += std::to_string(v.get_int64()); break;
    case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); break;
    case boost::json::kind::double_: write_double(out, v.get_double()); break;
    case boost::json::kind::string: out += boost::json::serialize(v.get_string()); break;
    case boost::json::kind::array: {
      const auto& a = v.get_array();
      out += '[';
      bool first = true;
      for (const auto& e : a) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(depth + 1);
        write(out, e, indent, depth + 1);
      }
      if (!a.empty()) newline(depth);
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      const auto& o = v.get_object();
      out += '{';
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        newline(depth + 1);
        out += boost::json::serialize(boost::json::string(kv.key()));
        out += ": ";
        write(out, kv.value(), indent, depth + 1);
      }
      if (!o.empty()) newline(depth);
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string to_json_line(const boost::json::value& v) {
  std::string out;
  write(out, v, -1, 0);
  return out;
}

std::string to_json_pretty(const boost::json::value& v) {
  std::string out;
  write(out, v, 2, 0);
  out += '\n';
  return out;
}

boost::json::value parse_json(std::string_view text, const std::string& what) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) throw std::runtime_error(what + ": invalid JSON: " + ec.message());
  return v;
}

}  // namespace knit::bench
