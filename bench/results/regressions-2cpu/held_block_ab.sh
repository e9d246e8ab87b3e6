#!/usr/bin/env bash
# held_handler_block: saturating rps and server CPU per response, KNIT_MODE=pooled (the mode
# whose calls hold the block; auto's pooled calls too), one worker, with and without it,
# interleaved. WITH: knit-server of this branch; WITHOUT: the same source with
# without_held_handler_block.patch applied (the block neither taken nor released).
#   held_block_ab.sh OUT_DIR WITH WITHOUT [REPS] [WINDOW_S] [COST_PROFILE]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1; WITH=$2; WITHOUT=$3; REPS=${4:-5}; WINDOW=${5:-4}; PROFILE=${6:-native}
E=KNIT_MODE=pooled,KNIT_THREADS=1,KNIT_COST_PROFILE=$PROFILE
uptime
"$HERE/ab.py" --out "$OUT" --reps "$REPS" --window "$WINDOW" --warmup 2 \
  --case "with-block=$WITH,$E" --case "without-block=$WITHOUT,$E" \
  --route ping:GET:/ping:50 --route ssr:POST:/ssr:50:0:ssr --route jwt:POST:/jwt:50:0:jwt
uptime
