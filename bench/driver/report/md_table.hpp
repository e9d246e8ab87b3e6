// Markdown table lines, shared by the report's sections.
#pragma once

#include <string>
#include <vector>

namespace knit::bench {

// "| a | b |\n"
std::string md_row(const std::vector<std::string>& cells);
// The header row and its rule; right[i] right-aligns column i.
std::string md_header(const std::vector<std::string>& cells, const std::vector<bool>& right = {});

}  // namespace knit::bench
