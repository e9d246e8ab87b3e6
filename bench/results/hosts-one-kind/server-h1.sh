#!/usr/bin/env bash
# knit-server pooled at H = 1 (KNIT_THREADS=1, bun costs): 58ff45c, 574c365 and MINE
# interleaved by bench/results/regressions-2cpu/ab.py (order rotated each repetition; server on
# CPU 0, knit-load 58ff45c's on CPU 1), saturating (50 connections each on /ping, /ssr, /jwt)
# then a fixed 1,500 rps per route (20 connections each): rps and server CPU-µs per response.
#   server-h1.sh MINE OUT [REPS] [WINDOW]     (defaults 3 repetitions, 8 s windows)
set -euo pipefail
mine=${1:?usage: server-h1.sh MINE OUT [REPS] [WINDOW]}
out=${2:?usage: server-h1.sh MINE OUT [REPS] [WINDOW]}
reps=${3:-3} window=${4:-8}
here=$(cd "$(dirname "$0")" && pwd)
ab=$here/../regressions-2cpu/ab.py
e=KNIT_COST_PROFILE=bun,KNIT_THREADS=1,KNIT_MODE=pooled
cases=(--case "58ff45c=/work/peer-58ff45c/knit-server,$e"
       --case "574c365=/work/peer-574c365/knit-server,$e"
       --case "mine=$(realpath "$mine"),$e")
"$ab" --out "$out/saturating" --reps "$reps" --window "$window" --warmup 2 "${cases[@]}" \
  --route ping:GET:/ping:50 --route ssr:POST:/ssr:50:0:ssr --route jwt:POST:/jwt:50:0:jwt
"$ab" --out "$out/fixed-rate" --reps "$reps" --window "$window" --warmup 2 "${cases[@]}" \
  --route ping:GET:/ping:20:1500 --route ssr:POST:/ssr:20:1500:ssr \
  --route jwt:POST:/jwt:20:1500:jwt
