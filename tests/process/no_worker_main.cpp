// process_no_worker_main: a program that registers a process task and starts process
// workers but forgets knit::worker_main, used as a worker executable by ahead_test: each of
// its children re-runs this main and reaches process_workers, where knit stops it (exit 123)
// before it starts any child of its own. Without that stop it is a fork storm.
#include <string>
#include <string_view>

#include "knit/knit.hpp"
#include "knit/process.hpp"

int main(int, char**) {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  knit::pool_options o;
  o.process.worker_executable = "/proc/self/exe";
  knit::pool pool(o);
  knit::process_workers workers(pool);  // in a child: stopped here, exit 123
  return 0;
}
