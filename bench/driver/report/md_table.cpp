// Markdown table lines, shared by the report's sections.
#include "driver/report/md_table.hpp"

namespace knit::bench {

std::string md_row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const auto& c : cells) s += " " + c + " |";
  return s + "\n";
}

std::string md_header(const std::vector<std::string>& cells, const std::vector<bool>& right) {
  std::string s = md_row(cells) + "|";
  for (size_t i = 0; i < cells.size(); ++i) s += (i < right.size() && right[i]) ? "---:|" : "---|";
  return s + "\n";
}

}  // namespace knit::bench
