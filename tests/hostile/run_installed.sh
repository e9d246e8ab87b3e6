#!/usr/bin/env bash
# run_installed.sh <prefix> <work dir>: builds tests/hostile against the knit installed under
# <prefix> (as tests/package/check_examples.sh builds examples/, which calls this) and runs
# it: each process task attacks its host from inside the strict sandbox. The program's stdout
# and stderr are pipes (the stdio attack aims at a pipe its host reads); stdout is shown, its
# stderr (the host's notes and the children's forwarded output) only when a check fails.
set -euo pipefail
prefix=$(readlink -f "$1")
work=$2
source_dir=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/build" -j "$(nproc)"
log="$work/stderr.log"
# The program bounds itself (a watchdog: < 60 s); timeout is the last resort. Its stdout goes
# to fd 3 (the outer pipe), its stderr into the inner pipe; both cats are waited for.
set +e
{
  timeout -k 5 90 "$work/build/hostile" 2>&1 >&3 3>&- | cat >"$log"
  echo "${PIPESTATUS[0]}" >"$work/rc"
} 3>&1 | cat
set -e
rc=$(cat "$work/rc")
if [ "$rc" -ne 0 ]; then
  echo "run_installed: hostile exited $rc; its stderr (last 40 lines, cut to 300 columns):" >&2
  tail -n 40 "$log" | cut -c1-300 >&2
  exit "$rc"
fi
echo "run_installed: every hostile check passed against $prefix"
