#!/usr/bin/env bash
# knit-server's saturating heavy throughput with process workers by lane depth
# (bench/process/lanes_plan.json) against thread workers, interleaved repetitions in one run.
# Writes OUT (default bench/results/process-lanes): server/ (knit-bench's rows and report),
# summary.txt (heavy rps per depth, ring / thread per repetition), machine.txt.
#
#   bench/process/lanes_figures.sh [KNIT_BENCH] [OUT]
# Environment: WINDOW_S (the plan's 8), REPS (the plan's 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH=${1:-build/bin/knit-bench}
OUT=${2:-bench/results/process-lanes}
mkdir -p "$OUT"
machine() { echo "# $1 $(date -u +%FT%TZ) load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
{
  echo "# $(git rev-parse --short HEAD) ($(git status --porcelain | wc -l) files changed)"
  machine before
} >"$OUT/machine.txt"
BENCH=$BENCH bench/process/server_plan.sh bench/process/lanes_plan.json "$OUT" \
  "${WINDOW_S:-}" "${REPS:-}"
machine after >>"$OUT/machine.txt"
python3 - "$OUT/server/rows.jsonl" >"$OUT/summary.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def heavy(r): return r["routes"]["ssr"]["rps"] + r["routes"]["jwt"]["rps"]
by = {}
for r in rows:
    by.setdefault(r["tag"], {})[r["rep"]] = r
thread = by["thread-t1"]
print("case        heavy rps per repetition         ring / thread per repetition   median")
for tag in sorted(by, key=lambda t: (t != "thread-t1", int(t[6:]) if t.startswith("ring-l") else 0)):
    reps = by[tag]
    values = " ".join(f"{heavy(reps[k]):7.0f}" for k in sorted(reps))
    ratios = [heavy(reps[k]) / heavy(thread[k]) for k in sorted(reps) if k in thread]
    print(f"{tag:10s}  {values:32s} {' '.join(f'{x:.3f}' for x in ratios):30s} "
          f"{statistics.median(ratios):.3f}")
PY
cat "$OUT/summary.txt"
