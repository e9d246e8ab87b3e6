#!/usr/bin/env bash
# check_examples.sh <prefix> <work dir>: builds examples/ against the knit installed under
# <prefix> (an install prefix, or a .deb extracted: its usr/) as a user's project would,
# and runs each example: the CMake package static (knit::knit, knit::asio), then shared
# (knit::knit_shared, knit::asio_shared), then pkg-config (knit.pc, then knit-shared.pc).
# A static build must not need libknit.so, a shared one must load <prefix>'s. Used by
# `./knit consumer` and tests/package/check_deb.sh.
set -euo pipefail
prefix=$(readlink -f "$1")
work=$2
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$(nproc)
libdir=$(dirname "$(find "$prefix" -name libknit.a -print -quit)")
[ -d "$libdir" ] || { echo "check_examples: no libknit.a under $prefix" >&2; exit 1; }

needs_libknit() {  # whether <binary>'s dynamic section names libknit.so.*
  local dynamic
  dynamic=$(readelf -d "$1")  # kept first: grep -q leaving early fails a pipe (pipefail)
  grep -q 'NEEDED.*\[libknit\.so' <<<"$dynamic"
}
fail() { echo "check_examples: $*" >&2; exit 1; }

for kind in static shared; do
  shared=OFF
  [ "$kind" = shared ] && shared=ON
  cmake -S "$source_dir/examples" -B "$work/$kind" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DKNIT_EXAMPLES_SHARED=$shared >/dev/null
  cmake --build "$work/$kind" -j "$jobs"
  ctest --test-dir "$work/$kind" --output-on-failure --timeout 120
done
! needs_libknit "$work/static/poll_loop" || fail "the static build links libknit.so"
needs_libknit "$work/shared/poll_loop" || fail "the shared build does not link libknit.so"
# The loader must find the library under <prefix>, not another one.
loaded=$(ldd "$work/shared/poll_loop")
grep -q "=> $libdir/libknit\.so" <<<"$loaded" || fail "the shared example loads no $libdir/libknit.so:
$loaded"

# pkg-config sees the same install: the poll() example from knit.pc alone (static), then
# from knit-shared.pc (run with <prefix>'s libdir on LD_LIBRARY_PATH).
for pc in knit knit-shared; do
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs "$pc")
  # shellcheck disable=SC2086  # flags is a list of flags
  c++ -std=c++20 -o "$work/poll_loop_$pc" "$source_dir/examples/poll_loop.cpp" $flags
  LD_LIBRARY_PATH="$libdir" "$work/poll_loop_$pc"
done
! needs_libknit "$work/poll_loop_knit" || fail "knit.pc links libknit.so"
needs_libknit "$work/poll_loop_knit-shared" || fail "knit-shared.pc does not link libknit.so"
# knit attacked from inside its sandboxed children, built against the same install.
"$source_dir/tests/hostile/run_installed.sh" "$prefix" "$work/hostile"
echo "check_examples: examples built and run against $prefix (CMake static and shared," \
     "pkg-config knit and knit-shared)"
