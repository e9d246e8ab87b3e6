#!/usr/bin/env bash
# KNIT_MODE=auto against inline at zero route cost (the cost sweep's first row: native cost
# profile, KNIT_SSR_COST_US=KNIT_JWT_COST_US=0, KNIT_THREADS=1 for auto; knit-load closed loop,
# 50 connections on each of /ping, /ssr, /jwt), b7af6e4 and 58ff45c side by side, interleaved.
#   auto_vs_inline.sh OUT_DIR [REPS] [WINDOW_S] [extra --case ...]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1; REPS=${2:-4}; WINDOW=${3:-4}; shift $(( $# < 3 ? $# : 3 ))
OLD=${OLD:-/work/peer-b7af6e4/knit-server}
NEW=${NEW:-/work/peer-58ff45c/knit-server}
E=KNIT_COST_PROFILE=native,KNIT_SSR_COST_US=0,KNIT_JWT_COST_US=0,KNIT_THREADS=1
uptime
"$HERE/ab.py" --out "$OUT" --reps "$REPS" --window "$WINDOW" --warmup 2 \
  --case "b7af6e4-inline=$OLD,KNIT_MODE=inline,$E" --case "b7af6e4-auto=$OLD,KNIT_MODE=auto,$E" \
  --case "58ff45c-inline=$NEW,KNIT_MODE=inline,$E" --case "58ff45c-auto=$NEW,KNIT_MODE=auto,$E" \
  "$@" \
  --route ping:GET:/ping:50 --route ssr:POST:/ssr:50:0:ssr --route jwt:POST:/jwt:50:0:jwt
uptime
