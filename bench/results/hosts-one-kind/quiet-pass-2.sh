#!/usr/bin/env bash
# Second quiet pass (coordinator): fixed-rate CPU per response at H = 1 with 5 repetitions,
# the queue-wait deadline off as a fourth case; one-host micro rows, 5 pairs.
set -uo pipefail
cd /work/main
e=KNIT_COST_PROFILE=bun,KNIT_THREADS=1,KNIT_MODE=pooled
echo "== start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $(git rev-parse --short HEAD)"
AB_NICE=-10 bench/results/regressions-2cpu/ab.py --out /work/quiet/h1-fixed --reps 5 --window 8 --warmup 2 \
  --case "58ff45c=/work/peer-58ff45c/knit-server,$e" --case "574c365=/work/peer-574c365/knit-server,$e" \
  --case "main=/tmp/knit-server-main,$e" --case "main-qwd-off=/tmp/knit-server-main,$e,KNIT_MAX_QUEUE_WAIT_MS=0" \
  --route ping:GET:/ping:20:1500 --route ssr:POST:/ssr:20:1500:ssr --route jwt:POST:/jwt:20:1500:jwt \
  > /work/quiet/h1-fixed.txt 2>&1
echo "== fixed done $(date -u +%T)"
bench/results/hosts-one-kind/one-host.sh /tmp/knit-micro-main /work/peer-58ff45c/knit-micro /work/peer-574c365/knit-micro 5 > /work/quiet/one-host-2.txt 2>&1
echo "== all done $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
