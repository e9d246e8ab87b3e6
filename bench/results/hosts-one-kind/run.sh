#!/usr/bin/env bash
# The figures of README.md: BEFORE and AFTER builds side by side, interleaved in one run,
# each pinned to CPUs 0-1. run.sh BEFORE_MICRO AFTER_MICRO BEFORE_FAIRNESS AFTER_FAIRNESS
set -uo pipefail
before_micro=$1 after_micro=$2 before_fair=$3 after_fair=$4
rows='peer/(round_trip_back_to_back|burst_64_in_flight|steady_stream_host_cpu)/knit'
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc)"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node0)'
for pair in 1 2 3; do
  for side in before after; do
    bin=$before_micro; [ "$side" = after ] && bin=$after_micro
    echo "== micro pair $pair $side ($bin) load: $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 0-1 "$bin" --benchmark_filter="$rows" 2>/dev/null | grep -E '^peer/'
  done
done
for pair in 1 2; do
  for side in before after; do
    bin=$before_fair; [ "$side" = after ] && bin=$after_fair
    echo "== share pair $pair $side load: $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 0-1 "$bin" share 10
  done
done
for pair in 1 2; do
  for side in before after; do
    bin=$before_fair; [ "$side" = after ] && bin=$after_fair
    echo "== victim pair $pair $side load: $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c 0-1 "$bin" victim 5
  done
done
echo "== $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
