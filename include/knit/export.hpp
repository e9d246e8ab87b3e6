// knit/export.hpp: KNIT_API, the mark on every class and function that libknit.so exports.
// The library's sources are compiled with -fvisibility=hidden (and hidden inline functions),
// so the shared library exports the public API declared in include/knit/ and nothing of
// src/: its internals can change without breaking a program linked against libknit.so.
// The static library is built from the same sources with the same flags; visibility only
// matters at a shared object's boundary, so a static link is unaffected.
#pragma once

/// Marks a public class or function as exported from libknit.so (default ELF visibility);
/// everything not marked stays inside the library.
#define KNIT_API __attribute__((visibility("default")))
