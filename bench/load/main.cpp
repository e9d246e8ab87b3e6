// knit-load entry point: parse flags, run, write the JSON and/or the human summary.
#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <boost/json/serialize.hpp>

#include "cli.hpp"
#include "report_json.hpp"
#include "report_text.hpp"
#include "runner.hpp"

int main(int argc, char** argv) {
  using namespace knit_load;
  // Writes use MSG_NOSIGNAL; this also covers anything else that writes to a dead socket/pipe.
  std::signal(SIGPIPE, SIG_IGN);
  // Large --route CONNS counts can pass the usual soft limit of 1024 descriptors.
  if (rlimit lim{}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }

  load_config cfg;
  try {
    cfg = parse_cli(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const cli_help& e) {
    std::cout << e.what();
    return 0;
  } catch (const cli_error& e) {
    std::cerr << e.what();
    if (std::string(e.what()).back() != '\n') std::cerr << '\n';
    return 2;
  }

  run_result result;
  try {
    result = run_load(cfg, &std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "knit-load: " << e.what() << '\n';
    return 1;
  }

  if (cfg.json_path.empty()) {
    print_summary(std::cout, result);
    return 0;
  }
  const std::string json = boost::json::serialize(to_json(result)) + "\n";
  if (cfg.json_path == "-") {
    // stdout is the JSON; the summary still goes somewhere a human looks.
    print_summary(std::cerr, result);
    std::cout << json << std::flush;
  } else {
    std::ofstream out(cfg.json_path, std::ios::binary);
    if (!(out << json) || !out.flush()) {
      std::cerr << "knit-load: cannot write " << cfg.json_path << '\n';
      return 1;
    }
    print_summary(std::cout, result);
  }
  return 0;
}
