// A strict reader of the Prometheus text exposition format 0.0.4, for the tests: every line must
// be a HELP or TYPE comment or a sample, every sample's family declared by a TYPE line before
// it, and each histogram's buckets cumulative and consistent with its count.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace knit_test {

struct prom_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct prom_page {
  std::vector<prom_sample> samples;
  std::map<std::string, std::string> types;  // family -> counter, gauge, histogram, ...
  std::set<std::string> helped;              // families with a HELP line
  std::vector<std::string> errors;           // every line that broke a rule, and why

  // The sum of `name`'s samples whose labels include every one of `match`.
  double sum(const std::string& name, const std::map<std::string, std::string>& match = {}) const {
    double total = 0;
    for (const prom_sample& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : match) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) all = false;
      }
      if (all) total += s.value;
    }
    return total;
  }

  bool has(const std::string& name) const {
    return std::any_of(samples.begin(), samples.end(),
                       [&](const prom_sample& s) { return s.name == name; });
  }
};

// The family a sample belongs to: a histogram's _bucket, _sum and _count samples are its own.
inline std::string prom_family(const prom_page& page, const std::string& name) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view sfx(suffix);
    if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
      const std::string base = name.substr(0, name.size() - sfx.size());
      auto it = page.types.find(base);
      if (it != page.types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

inline prom_page parse_prometheus_text(std::string_view text) {
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*))");
  static const std::regex type(
      R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  // name{labels} value: the value a float, +Inf, -Inf or NaN.
  static const std::regex sample(std::string(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? )") +
                                 R"(([-+]?([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?|Inf|NaN)))");
  static const std::regex label(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  prom_page page;
  if (text.empty() || text.back() != '\n') page.errors.push_back("the page must end with \\n");
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      if (!page.helped.insert(m[1]).second) page.errors.push_back("second HELP: " + line);
    } else if (std::regex_match(line, m, type)) {
      if (!page.types.emplace(m[1], m[2]).second) page.errors.push_back("second TYPE: " + line);
    } else if (std::regex_match(line, m, sample)) {
      prom_sample s;
      s.name = m[1];
      s.value = std::strtod(m[4].str().c_str(), nullptr);
      // The labels, comma-separated, each key="value".
      std::string rest = m[3];
      while (!rest.empty()) {
        std::smatch l;
        if (!std::regex_search(rest, l, label) || l.position(0) != 0) {
          page.errors.push_back("bad labels: " + line);
          break;
        }
        if (!s.labels.emplace(l[1], l[2]).second) page.errors.push_back("label twice: " + line);
        rest = rest.substr(static_cast<std::size_t>(l.length(0)));
        if (!rest.empty()) {
          if (rest[0] != ',') {
            page.errors.push_back("bad labels: " + line);
            break;
          }
          rest = rest.substr(1);
        }
      }
      const std::string family = prom_family(page, s.name);
      if (!page.types.count(family)) page.errors.push_back("no TYPE before: " + line);
      page.samples.push_back(std::move(s));
    } else {
      page.errors.push_back("not a sample or comment: " + line);
    }
  }
  return page;
}

// Every histogram's series (its labels but le): buckets in rising le order with rising counts,
// ending in +Inf, whose count equals _count. Returns what breaks that.
inline std::vector<std::string> histogram_errors(const prom_page& page) {
  std::vector<std::string> errors;
  for (const auto& [family, t] : page.types) {
    if (t != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> series;
    std::map<std::map<std::string, std::string>, double> counts;
    for (const prom_sample& s : page.samples) {
      if (s.name == family + "_bucket") {
        auto labels = s.labels;
        const std::string le = labels["le"];
        labels.erase("le");
        series[labels].emplace_back(le == "+Inf" ? 1e300 : std::strtod(le.c_str(), nullptr),
                                    s.value);
      } else if (s.name == family + "_count") {
        counts[s.labels] = s.value;
      }
    }
    for (const auto& [labels, buckets] : series) {
      for (std::size_t i = 1; i < buckets.size(); ++i) {
        if (buckets[i].first <= buckets[i - 1].first) errors.push_back(family + ": le not rising");
        if (buckets[i].second < buckets[i - 1].second) {
          errors.push_back(family + ": bucket counts fall");
        }
      }
      if (buckets.empty() || buckets.back().first != 1e300) {
        errors.push_back(family + ": no +Inf bucket");
      } else if (!counts.count(labels) || counts.at(labels) != buckets.back().second) {
        errors.push_back(family + ": _count differs from the +Inf bucket");
      }
    }
  }
  return errors;
}

}  // namespace knit_test
