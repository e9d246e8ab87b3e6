#!/usr/bin/env bash
# KNIT_HEAVY_SHARE (issue 34): /ping latency beside saturated heavy routes on a CPU the loop
# shares with the worker, and the CPU share the heavy routes keep. Server on CPU 0 (loop and
# its one worker share it), knit-load on CPU 1, KNIT_COST_PROFILE=bun, KNIT_THREADS=1, every
# run interleaved with its peers by bench/tools/server_ab.py (order rotated per repetition).
#   (a) /ping at a fixed 10,000 rps alone (share 25, the default; and off)
#   (b) the same /ping beside /ssr and /jwt saturating (50 connections each): share 25, share
#       off (0: the old behaviour) and KNIT_MODE=asio: /ping p99 and heavy rps
#   (c) all three routes closed loop: /ping p99 and the heavy routes' CPU share, for share
#       10, 25 and 50 (the share is estimated as heavy responses/s x the profile's cost per
#       response, from the server's banner: heavy_share_summary.py)
# 7 cases x REPS x (WARMUP + WINDOW + ~1.5 s start/stop): 30 s x 3 reps = ~11.5 minutes.
# Usage: bench/tools/heavy_share.sh [OUT]   (BIN, LOAD, WINDOW, REPS, WARMUP from the
# environment; BIN defaults to build/bin/knit-server, LOAD to build/bin/knit-load)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/bench/results/heavy-share/run-$(date -u +%Y%m%dT%H%M%SZ)}
bin=${BIN:-$repo/build/bin/knit-server}
load=${LOAD:-$repo/build/bin/knit-load}
window=${WINDOW:-30}
reps=${REPS:-3}
warmup=${WARMUP:-1}
base="KNIT_COST_PROFILE=bun,KNIT_THREADS=1"
ab() {  # ab OUT_SUBDIR ROUTES... -- CASES...
  local dir=$1
  shift
  python3 "$repo/bench/tools/server_ab.py" --out "$out/$dir" --reps "$reps" --window "$window" \
    --warmup "$warmup" --load "$load" "$@"
}
ping_fixed="ping:GET:/ping:50:10000"
heavy=(--route "ssr:POST:/ssr:50::ssr" --route "jwt:POST:/jwt:50::jwt")

ab a-ping-alone --route "$ping_fixed" \
  --case "share25=$bin,$base,KNIT_HEAVY_SHARE=25" --case "off=$bin,$base,KNIT_HEAVY_SHARE=0"
ab b-ping-beside-heavy --route "$ping_fixed" "${heavy[@]}" \
  --case "share25=$bin,$base,KNIT_HEAVY_SHARE=25" --case "off=$bin,$base,KNIT_HEAVY_SHARE=0" \
  --case "asio=$bin,$base,KNIT_MODE=asio"
ab c-closed-loop --route "ping:GET:/ping:50" "${heavy[@]}" \
  --case "share10=$bin,$base,KNIT_HEAVY_SHARE=10" \
  --case "share25=$bin,$base,KNIT_HEAVY_SHARE=25" \
  --case "share50=$bin,$base,KNIT_HEAVY_SHARE=50"
python3 "$here/heavy_share_summary.py" "$out" | tee "$out/summary.txt"
