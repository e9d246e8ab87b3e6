#!/usr/bin/env bash
# steady_stream_host_cpu only, 10 pairs, before (58ff45c) / now (574c365) / mine (main e422ab9), pinned 0-1.
set -uo pipefail
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc)"
for pair in $(seq 1 10); do
  for side in before now mine; do
    case $side in before) bin=/work/peer-58ff45c/knit-micro ;; now) bin=/work/peer-574c365/knit-micro ;; mine) bin=/tmp/knit-micro-main ;; esac
    echo "== micro pair $pair $side ($bin) load: $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 0-1 "$bin" --benchmark_filter='peer/steady_stream_host_cpu/knit' 2>/dev/null | grep -E '^peer/'
  done
done
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
