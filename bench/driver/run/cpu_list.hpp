// CPU lists as --server-cpus / --gen-cpus take them and rows and meta.json write them:
// "0-3,6" is CPUs 0, 1, 2, 3 and 6; and the default split of a machine's CPUs between the
// server and the generator.
#pragma once

#include <string>
#include <vector>

namespace knit::bench {

// "0-3,6" -> {0,1,2,3,6}. Throws std::invalid_argument on bad syntax.
std::vector<int> parse_cpu_list(const std::string& text);
// {0,1,2,3,6} -> "0-3,6".
std::string format_cpu_list(const std::vector<int>& cpus);

// The default layout of `ncpu` CPUs: the generator on the last gen_share of them (rounded
// down, at least one), the server on the rest, so the two never share a CPU. Fewer than
// two CPUs: both lists empty (unpinned).
struct cpu_split {
  std::vector<int> server, gen;
};
cpu_split split_cpus(int ncpu, double gen_share);

// True when the two sets may run on one CPU; an empty list is unpinned (every CPU).
bool cpu_sets_overlap(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace knit::bench
