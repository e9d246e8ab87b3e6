// process_skew_worker: a worker executable whose task registry differs from the test host's
// (one task more), for the handshake's registry-mismatch test.
#include <cstdio>
#include <string>
#include <string_view>

#include "knit/process.hpp"

int main(int argc, char** argv) {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  knit::register_process_task("extra", [](std::string_view) { return std::string("x"); });
  if (knit::worker_main(argc, argv)) return 0;
  std::fprintf(stderr, "process_skew_worker: run by the process tests as a worker only\n");
  return 2;
}
