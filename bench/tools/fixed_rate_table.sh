#!/usr/bin/env bash
# The seed's fixed-rate table (its section B: every route at a fixed rate, latency and CPU per
# request), for knit-server before and after a change, in one interleaved run: /ping, /ssr
# and /jwt each at RATE requests/s (knit-load's open loop, 50 connections a route),
# KNIT_COST_PROFILE=bun (the reference Bun server's CPU per /ssr and /jwt call), pooled with
# 1 and 2 workers, each build, order rotated per repetition (bench/tools/server_ab.py).
# Server on CPU 0 (its loop and workers share it), knit-load on CPU 1.
# 4 cases x REPS x (WARMUP + WINDOW + ~2 s): 30 s x 3 reps = ~7.5 minutes.
# Usage: bench/tools/fixed_rate_table.sh [OUT]   (BEFORE, AFTER, LOAD, RATE=2000, WINDOW=30,
#   REPS=3, WARMUP=5 from the environment)
set -euo pipefail
case ${1:-} in -h | --help) sed -n "2,11p" "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/bench/results/fixed-rate/run-$(date -u +%Y%m%dT%H%M%SZ)}
before=${BEFORE:?BEFORE=path of the knit-server build to compare against}
after=${AFTER:-$repo/build/bin/knit-server}
load=${LOAD:-$repo/build/bin/knit-load}
rate=${RATE:-2000}
base="KNIT_COST_PROFILE=bun,KNIT_MODE=pooled"
python3 "$repo/bench/tools/server_ab.py" --out "$out" --reps "${REPS:-3}" \
  --window "${WINDOW:-30}" --warmup "${WARMUP:-5}" --load "$load" \
  --route "ping:GET:/ping:50:$rate" --route "ssr:POST:/ssr:50:$rate:ssr" \
  --route "jwt:POST:/jwt:50:$rate:jwt" \
  --case "before-w1=$before,$base,KNIT_THREADS=1" --case "after-w1=$after,$base,KNIT_THREADS=1" \
  --case "before-w2=$before,$base,KNIT_THREADS=2" --case "after-w2=$after,$base,KNIT_THREADS=2"
python3 "$here/fixed_rate_summary.py" "$out/rows.jsonl" | tee "$out/summary.md"
