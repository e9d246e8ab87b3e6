// CPU lists as --server-cpus / --gen-cpus take them and rows and meta.json write them:
// "0-3,6" is CPUs 0, 1, 2, 3 and 6.
#pragma once

#include <string>
#include <vector>

namespace knit::bench {

// "0-3,6" -> {0,1,2,3,6}. Throws std::invalid_argument on bad syntax.
std::vector<int> parse_cpu_list(const std::string& text);
// {0,1,2,3,6} -> "0-3,6".
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace knit::bench
