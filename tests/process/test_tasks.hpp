// The process tasks the process tests use, registered by process_test_main.cpp in the host
// and in every child (the same binary): good ones and ones that crash in each way.
#pragma once

namespace knit_test {

// Registers every test task; call once, first thing in main.
void register_test_tasks();

}  // namespace knit_test
