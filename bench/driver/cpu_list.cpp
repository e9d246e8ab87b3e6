// CPU lists as --server-cpus / --gen-cpus take them and rows and meta.json write them:
// "0-3,6" is CPUs 0, 1, 2, 3 and 6.
#include "driver/cpu_list.hpp"

#include <sched.h>

#include <sstream>
#include <stdexcept>

namespace knit::bench {

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  if (text.empty()) return cpus;
  std::stringstream ss(text);
  std::string part;
  auto num = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("bad CPU list \"" + text + "\" (expected e.g. 0-3,6)");
    int v = std::stoi(s);
    if (v >= CPU_SETSIZE) throw std::invalid_argument("CPU " + s + " out of range");
    return v;
  };
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    if (dash == std::string::npos) {
      cpus.push_back(num(part));
    } else {
      int a = num(part.substr(0, dash)), b = num(part.substr(dash + 1));
      if (b < a) throw std::invalid_argument("bad CPU range \"" + part + "\"");
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    }
  }
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size(); ++i) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(cpus[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(cpus[j]);
    }
    i = j;
  }
  return s;
}

}  // namespace knit::bench
