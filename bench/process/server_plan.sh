#!/usr/bin/env bash
# Runs one knit-bench plan against this build's knit-server and knit-load, the server on
# CPU 0 and knit-load on CPU 1, with the plan's window and repetitions overridden: the
# server part of ring_figures.sh and lanes_figures.sh. Writes OUT/server/ (knit-bench's
# rows and report) and OUT/server-run.log; on a failure prints the log's tail, exits 1.
#
#   bench/process/server_plan.sh PLAN OUT [WINDOW_S] [REPS]
# Environment: BIN (the knit-server and knit-load, default build/bin); BENCH (the knit-bench
# to drive it, default $BIN/knit-bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: $0 PLAN OUT [WINDOW_S] [REPS]" >&2; exit 2; }
PLAN_FILE=$1
[ -r "$PLAN_FILE" ] || { echo "$0: cannot read the plan $PLAN_FILE" >&2; exit 2; }
OUT=$2
BIN=${BIN:-build/bin}
BENCH=${BENCH:-$BIN/knit-bench}
plan=$(mktemp)
trap 'rm -f "$plan"' EXIT
python3 - "$PLAN_FILE" "${3:-}" "${4:-}" >"$plan" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
if sys.argv[2]: plan["window_s"] = int(sys.argv[2])
if sys.argv[3]: plan["repeat"] = int(sys.argv[3])
print(json.dumps(plan))
PY
mkdir -p "$OUT"
rm -rf "$OUT/server"
"$BENCH" run --plan "$plan" --server "$BIN/knit-server" --load "$BIN/knit-load" \
  --server-cpus 0 --gen-cpus 1 --foreign-retries 0 --no-charts --out "$OUT/server" \
  >"$OUT/server-run.log" 2>&1 || { tail -20 "$OUT/server-run.log" >&2; exit 1; }
