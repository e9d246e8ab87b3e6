// Which python3 renders the report: PATH's, unless it cannot import matplotlib and the
// system's (/usr/bin/python3, where Debian's python3-matplotlib goes) can.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace knit::bench {

// Why a fallback: a python3 earlier in PATH than the system's (pyenv's shim, a virtualenv) often
// lacks matplotlib while /usr/bin/python3 has it from `./knit deps`, and the report would then
// skip every chart with a warning although the machine can draw them.

// The choice itself, a pure function of its arguments: `candidates` are executables in order
// of preference (PATH's python3 first); without charts the first one, with charts the first
// one `imports_matplotlib` accepts, or the first one if none does (report.py then warns that
// the charts were skipped). "" when there is no candidate.
std::string choose_report_python(const std::vector<std::string>& candidates, bool with_charts,
                                 const std::function<bool(const std::string&)>& imports_matplotlib);

// choose_report_python over PATH's python3 and /usr/bin/python3 (the same file counted once),
// asking each with `python -c "import matplotlib"` (only when charts are wanted, and only
// until one succeeds). "" when neither exists.
std::string report_python(bool with_charts);

}  // namespace knit::bench
