// CPU lists as --server-cpus / --gen-cpus take them and rows and meta.json write them:
// "0-3,6" is CPUs 0, 1, 2, 3 and 6; and the default split of a machine's CPUs between the
// server and the generator.
#include "driver/run/cpu_list.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
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

cpu_split split_cpus(int ncpu, double gen_share) {
  cpu_split s;
  if (ncpu < 2) return s;
  const int gen = std::clamp(static_cast<int>(std::floor(ncpu * gen_share)), 1, ncpu - 1);
  for (int c = 0; c < ncpu - gen; ++c) s.server.push_back(c);
  for (int c = ncpu - gen; c < ncpu; ++c) s.gen.push_back(c);
  return s;
}

bool cpu_sets_overlap(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.empty() || b.empty()) return true;
  return std::any_of(a.begin(), a.end(),
                     [&](int c) { return std::find(b.begin(), b.end(), c) != b.end(); });
}

}  // namespace knit::bench
