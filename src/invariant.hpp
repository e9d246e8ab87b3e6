// invariant: KNIT_ASSERT, the library's runtime check of its own invariants (a record's
// state transitions, "cannot fail" pushes, doorbell CASes). A failed check is a bug in knit,
// never in the caller: it says file:line and the condition (to the log sink, knit/log.hpp;
// stderr by default) and aborts.
//
// Checked builds only: active when NDEBUG is not set (Debug) or when KNIT_SANITIZE is set
// (the sanitizer builds, which define it in the top-level CMakeLists.txt); a Release build
// compiles the condition out entirely, so the hot paths pay nothing. The condition must
// have no side effects. KNIT_FORCE_INVARIANTS turns the checks on in one translation unit
// whatever the build (the assertion's own test uses it).
#pragma once

#include <cstdlib>

#include "log_line.hpp"

#if !defined(NDEBUG) || defined(KNIT_SANITIZE) || defined(KNIT_FORCE_INVARIANTS)
#define KNIT_INVARIANTS_CHECKED 1
#else
#define KNIT_INVARIANTS_CHECKED 0
#endif

namespace knit::detail {

// Out of line and cold, so a check costs one compare and a not-taken branch at its site.
[[noreturn, gnu::cold, gnu::noinline]] inline void invariant_failed(
    const char* file, int line, const char* condition) noexcept {
  log_format("knit: invariant violated at %s:%d: %s", file, line, condition);
  std::abort();
}

}  // namespace knit::detail

#if KNIT_INVARIANTS_CHECKED
#define KNIT_ASSERT(condition)        \
  ((condition) ? static_cast<void>(0) \
               : ::knit::detail::invariant_failed(__FILE__, __LINE__, #condition))
#else
// Not evaluated, but still compiled: a check cannot rot in Release builds.
#define KNIT_ASSERT(condition) static_cast<void>(sizeof(static_cast<bool>(condition)))
#endif
