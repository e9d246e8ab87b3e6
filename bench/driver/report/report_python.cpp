// The python3 that runs report.py: PATH's, or /usr/bin/python3 when only that one has matplotlib.
#include "driver/report/report_python.hpp"

#include <stdlib.h>

#include <memory>

#include "driver/system/spawn.hpp"

namespace knit::bench {

std::string choose_report_python(
    const std::vector<std::string>& candidates, bool with_charts,
    const std::function<bool(const std::string&)>& imports_matplotlib) {
  if (candidates.empty()) return "";
  if (!with_charts) return candidates.front();
  for (const std::string& python : candidates) {
    if (imports_matplotlib(python)) return python;
  }
  return candidates.front();
}

namespace {

// The file a path names, links resolved ("" when it does not resolve).
std::string real_path(const std::string& path) {
  std::unique_ptr<char, decltype(&::free)> resolved(::realpath(path.c_str(), nullptr), &::free);
  return resolved ? std::string(resolved.get()) : std::string();
}

}  // namespace

std::string report_python(bool with_charts) {
  std::vector<std::string> candidates;
  const std::string on_path = find_in_path("python3");
  if (!on_path.empty()) candidates.push_back(on_path);
  const std::string system = find_in_path("/usr/bin/python3");
  // A pyenv shim or a link resolves elsewhere; the same file is asked once.
  if (!system.empty() && (on_path.empty() || real_path(on_path) != real_path(system))) {
    candidates.push_back(system);
  }
  return choose_report_python(candidates, with_charts, [](const std::string& python) {
    return capture_output({python, "-c", "import matplotlib"}).has_value();
  });
}

}  // namespace knit::bench
